// npm run bench:instructions: instructions per request, counted by valgrind's
// callgrind, for the logic-free proxy, the two floors (uWS over sluice's
// upstream client, and uWS over a bare one: what that client costs), sluice
// and (BENCH_BASELINE) an earlier build. CPU time on shared cores moves ±10-20 % between runs; an
// instruction count moves 1-3 % at the default 2,000 requests (a garbage
// collection lands in the window or not), whatever else the machine is doing,
// so a change of a few percent shows; INSTR_REQUESTS=6000 narrows it further.
// It counts the user-space instructions of the threads that serve requests
// (the main thread in process), after a warm-up, so JIT compilation and GC
// helper threads are left out, and so are the kernel's socket costs (the same
// for every target).
// It needs valgrind (`apt-get install valgrind`).
//
// Two more rows price parts of sluice: without its trace pipeline (what a
// trace costs per request), and with two gateway threads (what the threads
// model costs per request: the messages to the main thread, its trace
// writer). Its count is the main thread's and the gateway threads' (those
// that ran uWS); each thread warms up on its own, and a valgrind'ed JIT is
// slow to settle, so it first gets INSTR_THREAD_WARMUP (20,000 requests).
//
// Warm-up: V8 optimises a function only once it has run enough, and after
// 2,000 requests much of the request path (authenticate, resolveChat, the
// upstream read) still ran in its baseline tier: a JSON request read 242k
// instructions after 1,500 requests and 184k after 15,000 (the proxy 282k and
// 229k, the uWS floor 73k and 63k; 2026-11-28). The longer warm-up prices what
// a gateway pays once it has served a minute of traffic. A paced stream's
// warm-up runs in real time (some 40 ms a stream, one at a time), so it gets
// INSTR_PACED_WARMUP (2,000): its per-chunk code has run 40,000 times by then.
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { buildConfig } from '../src/config/load-config.js';
import { processExecArgv } from '../src/threads/young-generation.js';
import { stopServer } from './bench-procs.js';
import { chatBody } from './scenarios.js';
import { benchRequestHeaders, shapesPriced } from './production-headers.js';

const N = Number(process.env.INSTR_REQUESTS ?? 2000);
const WARM = Number(process.env.INSTR_WARMUP ?? 15_000);
const PACED_WARM = Number(process.env.INSTR_PACED_WARMUP ?? 2000);
const THREAD_WARM = Number(process.env.INSTR_THREAD_WARMUP ?? 20_000);
const SERVERS = fileURLToPath(new URL('./load-servers.js', import.meta.url));

function ready(proc: ChildProcess): Promise<{ port: number; key?: string }> {
  return new Promise((ok, fail) => {
    proc.once('message', (m: any) => ok(m.ready));
    proc.once('exit', (code) => fail(new Error(`exited with ${code}`)));
  });
}

/** The uWS binary (uws_<platform>_<arch>_<abi>.node), as callgrind names the object a thread ran code of. */
const UWS_OBJECT = /uws_\w+\.node/;

interface Target { name: string; kind: string; servers: string; threads?: number }

/** Instructions per request of the threads serving `t`, for `body`. */
async function count(t: Target, upstream: string, body: string, connections: number, warm: number): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-callgrind-'));
  const args = ['--tool=callgrind', '--smc-check=all-non-file', '--instr-atstart=no', '--separate-threads=yes', `--callgrind-out-file=${join(dir, 'out')}`,
    process.execPath, ...processExecArgv(buildConfig({}).server.semi_space_mb, []), t.servers, t.kind, upstream];
  // The turn budget (server.turn_budget_ms) is off unless BENCH_TURN_BUDGET_MS says otherwise: it is
  // measured in real time, and valgrind slows the gateway some 50 times, so every wave of arrivals
  // overran it and waited for immediates, which a run at full speed does for about 2 % of requests
  // (776 of 33,854 at 64 connections). It priced that real-time effect, not the request path: a JSON
  // request read 283-302k instructions with it on, 257-261k with it off (2026-11-28).
  const env = { BENCH_TURN_BUDGET_MS: '0', ...process.env, ...(t.threads ? { SLUICE_THREADS: String(t.threads) } : {}) };
  const proc = spawn('valgrind', args, { stdio: ['ignore', 'ignore', 'ignore', 'ipc'], env });
  try {
    const r = await ready(proc);
    const opts = { url: `http://127.0.0.1:${r.port}/v1/chat/completions`, method: 'POST' as const, connections, body,
      headers: { ...benchRequestHeaders(), 'content-type': 'application/json', authorization: `Bearer ${r.key ?? 'bench'}` } };
    await autocannon({ ...opts, amount: t.threads ? THREAD_WARM : warm });
    execFileSync('callgrind_control', ['--instr=on', String(proc.pid)], { stdio: 'ignore' });
    const run = await autocannon({ ...opts, amount: N });
    execFileSync('callgrind_control', ['--instr=off', String(proc.pid)], { stdio: 'ignore' });
    execFileSync('callgrind_control', ['--dump', String(proc.pid)], { stdio: 'ignore' });
    if (run.non2xx || run.errors) throw new Error(`${run.non2xx + run.errors} of ${N} requests failed`);
    // One file per thread; the main thread's ends in -01, and a gateway thread is one that ran uWS.
    let total = 0;
    let gatewayThreads = 0;
    for (const file of readdirSync(dir)) {
      const text = readFileSync(join(dir, file), 'utf8');
      const main = file.endsWith('-01');
      if (!main && !UWS_OBJECT.test(text)) continue;
      if (!main) gatewayThreads++;
      total += Number(/^totals: (\d+)/m.exec(text)?.[1] ?? 0);
    }
    if (!total) throw new Error('callgrind wrote no totals for the serving threads');
    // Without the uWS binary the threads cannot be told from V8's helpers: a count of the main thread alone would mislead.
    if (t.threads && gatewayThreads < t.threads) throw new Error(`${t.name}: found ${gatewayThreads} of ${t.threads} gateway threads (they are told by the uWS binary)`);
    return total / N;
  } finally {
    // Gracefully: a gateway killed outright leaves its embedded Postgres running and its data directory behind.
    await stopServer(proc, true);
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
  } catch {
    console.log('valgrind is not installed (apt-get install valgrind): nothing to count.');
    return;
  }
  const mock = fork(SERVERS, ['mock', ''], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const upstream = `http://127.0.0.1:${(await ready(mock)).port}`;
  const targets: Target[] = [
    { name: 'proxy', kind: 'proxy', servers: SERVERS },
    { name: 'uws floor', kind: 'uws-floor', servers: SERVERS },
    { name: 'net floor', kind: 'net-floor', servers: SERVERS },
    { name: 'sluice', kind: 'sluice', servers: SERVERS },
    { name: 'no traces', kind: 'sluice-notrace', servers: SERVERS },
    { name: '2 threads', kind: 'sluice', servers: SERVERS, threads: 2 },
  ];
  if (process.env.BENCH_BASELINE) targets.push({ name: 'before', kind: 'sluice', servers: join(resolve(process.env.BENCH_BASELINE), 'dist/bench/load-servers.js') });
  // INSTR_TARGETS=sluice,before counts only those (a valgrind'ed cell takes minutes); the proxy column then reads n/a.
  const only = process.env.INSTR_TARGETS?.split(',');
  const chosen = only ? targets.filter((t) => only.includes(t.name)) : targets;
  // Paced, every chunk is an upstream read of its own, as from a real model: the per-chunk path, which an
  // unpaced stream (its chunks arriving in a read or two) hardly runs. One stream at a time: the mock paces
  // in real time and valgrind slows the gateway some 50 times, so four at once kept it busy, chunks queued
  // into shared reads, and the count priced how many did. A gateway that kept up better read more often
  // and counted more (fc72e10: 662-677k; a later build, no different in its per-chunk code: 744-780k;
  // one at a time, 1.17-1.21M against 1.20-1.21M).
  const scenarios: Array<[string, string, number, number]> = [
    ['JSON 300 B', chatBody(300, false), 4, WARM], ['stream 20 chunks', chatBody(300, true), 4, WARM], ['stream, 2 ms pace', chatBody(300, true, { bench_pace_ms: 2 }), 1, PACED_WARM],
  ];
  console.log(`instructions per request, gateway threads, ${N} requests after ${WARM} (paced: ${PACED_WARM}; threaded: ${THREAD_WARM}) (callgrind); ${shapesPriced()}`);
  for (const [scenario, body, connections, warm] of scenarios) {
    let proxy = NaN;
    for (const t of chosen) {
      const n = await count(t, upstream, body, connections, warm);
      if (t.name === 'proxy') proxy = n;
      console.log(`  ${scenario.padEnd(18)} ${t.name.padEnd(9)} ${Math.round(n).toLocaleString('en').padStart(9)}  ${Number.isNaN(proxy) ? 'n/a' : `${(n / proxy).toFixed(2)}× proxy`}`);
    }
  }
  mock.kill();
}

await main();
