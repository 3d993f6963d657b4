// npm run bench:load. Starts a bare mock upstream, a logic-free node:http proxy
// and sluice, each in its own process, loads each with the same mix (JSON and
// 20-chunk streams, at 1 and 64 connections) with autocannon, and prints RPS,
// p50/p99 latency, CPU µs per request of the process under test, and streaming
// TTFB, as ratios to the bare mock and to the proxy, all from one run (sluice is
// also run with its trace pipeline off, to price tracing): absolute
// numbers on two shared cores are noise, ratios taken side by side are not.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { request as httpRequest, Agent } from 'node:http';
import autocannon from 'autocannon';

const DURATION = Number(process.env.BENCH_SECONDS ?? 5);
const SERVERS = fileURLToPath(new URL('./load-servers.js', import.meta.url));

interface Target { name: string; proc: ChildProcess; url: string; path: string; key: string }

function start(kind: string, upstream = ''): Promise<{ proc: ChildProcess; port: number; key: string }> {
  const proc = fork(SERVERS, [kind, upstream], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((ok, fail) => {
    proc.once('message', (m: any) => ok({ proc, port: m.ready.port, key: m.ready.key ?? 'bench' }));
    proc.once('exit', (code) => fail(new Error(`${kind} exited with ${code}`)));
  });
}

function cpuMicros(proc: ChildProcess): Promise<number> {
  return new Promise((ok) => {
    proc.once('message', (m: any) => ok(m.cpu.user + m.cpu.system));
    proc.send({ cmd: 'cpu' });
  });
}

const body = (stream: boolean) => JSON.stringify({ model: 'bench-model', stream, messages: [{ role: 'user', content: 'Say hello to the benchmark, briefly.' }] });

async function load(t: Target, stream: boolean, connections: number) {
  const cpu0 = await cpuMicros(t.proc);
  const r = await autocannon({
    url: t.url + t.path, method: 'POST', connections, duration: DURATION, pipelining: 1,
    headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json' }, body: body(stream),
  });
  const cpu1 = await cpuMicros(t.proc);
  const ok = r.requests.total - r.non2xx - r.errors;
  if (r.non2xx || r.errors) console.warn(`  ${t.name}: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, cpuUs: (cpu1 - cpu0) / Math.max(1, ok) };
}

/** Time to the first body byte of a stream, sequentially on one kept-alive connection. */
async function ttfb(t: Target, n = 300): Promise<{ p50: number; p99: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const u = new URL(t.url);
  const samples: number[] = [];
  const payload = body(true);
  for (let i = 0; i < n + 30; i++) {
    const ms = await new Promise<number>((ok, fail) => {
      const t0 = process.hrtime.bigint();
      let first = 0;
      const req = httpRequest({ host: u.hostname, port: u.port, path: t.path, method: 'POST', agent, headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json' } }, (res) => {
        res.on('data', () => { if (!first) first = Number(process.hrtime.bigint() - t0) / 1e6; });
        res.on('end', () => ok(first));
      });
      req.on('error', fail);
      req.end(payload);
    });
    if (i >= 30) samples.push(ms);
  }
  agent.destroy();
  samples.sort((a, b) => a - b);
  return { p50: samples[Math.floor(n * 0.5)]!, p99: samples[Math.floor(n * 0.99)]! };
}

const fmt = (n: number, d = 2) => n.toFixed(d);

async function main() {
  const mock = await start('mock');
  const mockUrl = `http://127.0.0.1:${mock.port}`;
  const proxy = await start('proxy', mockUrl);
  const gw = await start('sluice', mockUrl);
  const bare = await start('sluice-notrace', mockUrl);
  const targets: Target[] = [
    { name: 'mock', proc: mock.proc, url: mockUrl, path: '/v1/chat/completions', key: 'bench' },
    { name: 'proxy', proc: proxy.proc, url: `http://127.0.0.1:${proxy.port}`, path: '/v1/chat/completions', key: 'bench' },
    { name: 'sluice', proc: gw.proc, url: `http://127.0.0.1:${gw.port}`, path: '/v1/chat/completions', key: gw.key },
    { name: 'notrace', proc: bare.proc, url: `http://127.0.0.1:${bare.port}`, path: '/v1/chat/completions', key: bare.key },
  ];
  // Correctness first: every target answers the same way before anything is timed.
  for (const t of targets) {
    const r = await fetch(t.url + t.path, { method: 'POST', headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json' }, body: body(false) });
    const j: any = await r.json();
    console.assert(r.status === 200 && j.choices[0].message.content === 'hello from the bench mock', `${t.name} answered wrongly`);
    const s = await (await fetch(t.url + t.path, { method: 'POST', headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json' }, body: body(true) })).text();
    console.assert((s.match(/"content":"tok /g) ?? []).length === 20 && s.trimEnd().endsWith('data: [DONE]'), `${t.name} stream is wrong`);
  }
  console.log(`bench:load — ${DURATION}s per cell, autocannon, each server in its own process\n`);
  console.log('scenario          target   RPS       p50ms  p99ms  CPUµs/req  RPS/mock RPS/proxy CPU/proxy');
  for (const [stream, conns] of [[false, 1], [false, 64], [true, 1], [true, 64]] as const) {
    const res: Record<string, Awaited<ReturnType<typeof load>>> = {};
    for (const t of targets) res[t.name] = await load(t, stream, conns);
    for (const t of targets) {
      const r = res[t.name]!;
      console.log(`${(stream ? 'stream' : 'json').padEnd(6)} c=${String(conns).padEnd(8)} ${t.name.padEnd(8)} ${fmt(r.rps, 0).padEnd(9)} ${fmt(r.p50).padEnd(6)} ${fmt(r.p99).padEnd(6)} ${fmt(r.cpuUs, 1).padEnd(10)} ${fmt(r.rps / res.mock!.rps).padEnd(8)} ${fmt(r.rps / res.proxy!.rps).padEnd(9)} ${fmt(r.cpuUs / res.proxy!.cpuUs)}`);
    }
  }
  console.log('\nstreaming TTFB (sequential, one keep-alive connection, 300 samples)');
  const tt: Record<string, { p50: number; p99: number }> = {};
  for (const t of targets) tt[t.name] = await ttfb(t);
  for (const t of targets) {
    const v = tt[t.name]!;
    console.log(`  ${t.name.padEnd(7)} p50 ${fmt(v.p50, 3)} ms  p99 ${fmt(v.p99, 3)} ms  added over mock p50 ${fmt(v.p50 - tt.mock!.p50, 3)} ms  ratio to proxy p50 ${fmt(v.p50 / tt.proxy!.p50)}`);
  }
  for (const t of targets) t.proc.disconnect();
  setTimeout(() => { for (const t of targets) t.proc.kill(); process.exit(0); }, 2_000).unref();
}

await main();
