// Child-process entry for `npm run bench`: one server under test per process,
// so its CPU time, RSS and event-loop delay can be read in isolation.
//   mock           - a bare OpenAI-compatible upstream (JSON, 20-chunk streams, embeddings)
//   proxy          - a logic-free node:http proxy to the mock, over an undici pool
//   uws-floor      - a logic-free proxy on sluice's own stack (uWS, OriginClients)
//   net-floor      - the same over a bare client on net and llhttp, with none of sluice's client's checks
//   sluice         - the gateway, an organisation without policy, traces on
//   sluice-policy  - the same with DLP, the prompt shield and buffered moderation
//   sluice-notrace - no policy, the trace pipeline replaced by a no-op sink
// SLUICE_THREADS, when set, is passed as `server.threads`.
// MOCK_FAIL_EVERY=n makes the mock fail every n-th request (a 500 for JSON, a
// cut socket after a few chunks for streams); SLUICE_BENCH_REDIS_URL gives
// sluice a Redis. {cmd:'rss'} answers with the process's resident set size.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import pino from 'pino';
import { Pool } from 'undici';
import { startApp } from '../src/app.js';
import pg from 'pg';
import { buildConfig, loadConfig } from '../src/config/load-config.js';
import { startThreaded } from '../src/threads/threaded-gateway.js';
import type { ConfigInput } from '../src/config/schema.js';
import { createKey, ensureOrganizations } from '../src/store/api-keys-repo.js';
import { mockAnswerHeaders, openaiChunks } from './production-headers.js';
import { netFloorProxy } from './net-floor-proxy.js';
import { uwsFloorProxy } from './uws-floor-proxy.js';

export const STREAM_CHUNKS = 20;
const MOCK_KEY = 'bench-upstream-key';

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((ok) => { let s = ''; req.on('data', (c) => { s += c; }); req.on('end', () => ok(s)); });
}

// The kernel's accept queue as deep as it allows (somaxconn), not node's 511: the slow-stream cell opens
// 5,000 connections in about a second, and a dropped SYN would price TCP's retry timer, not the server.
const listen = (srv: ReturnType<typeof createServer>) => new Promise<number>((ok) => srv.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, () => ok((srv.address() as AddressInfo).port)));

function embeddings(body: string, res: ServerResponse): void {
  const input = JSON.parse(body).input as string[];
  const data = input.map((_, index) => ({ object: 'embedding', index, embedding: Array.from({ length: 256 }, (_v, i) => ((index * 31 + i) % 997) / 997 - 0.5) }));
  const json = JSON.stringify({ object: 'list', data, model: 'bench-embed', usage: { prompt_tokens: input.length * 8, total_tokens: input.length * 8 } });
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
  res.end(json);
}
const FAIL_EVERY = Number(process.env.MOCK_FAIL_EVERY ?? 0);
const OPENAI_HEADERS = mockAnswerHeaders();
/**
 * The slow-stream cell's streams this mock holds open now, and the most at once since the last reset:
 * the one count that means the same for every target, including one that sends the caller nothing
 * until its answer is whole (buffered moderation), whose caller sees no stream open until the end.
 */
const slowStreams = { open: 0, peak: 0 };
// One counter per kind, so that JSON requests and streams each fail 1 in n whatever the client's mix.
const served = { json: 0, stream: 0 };

async function mock(): Promise<number> {
  const json = JSON.stringify({ id: 'chatcmpl-b', object: 'chat.completion', created: 1, model: 'bench-model', choices: [{ index: 0, message: { role: 'assistant', content: 'hello from the bench mock' }, finish_reason: 'stop' }], usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 } });
  // As OpenAI writes its chunks (unless MOCK_OPENAI_CHUNKS=0), or their bare minimum.
  const real = openaiChunks();
  const chunkHead = `{"id":"chatcmpl-b","object":"chat.completion.chunk","created":1,"model":"bench-model",${real ? '"service_tier":"default","system_fingerprint":"fp_b","' : '"'}choices":[`;
  const head = `data: ${chunkHead}{"index":0,"delta":{"content":"tok `;
  // A pad of 1-16 characters from the chunk's number, so that two runs send the same bytes.
  const pad = (i: number) => (real ? `,"usage":null,"obfuscation":"${'q1Zx9a8B7c6D5e4F'.slice(0, 1 + ((i * 7) % 16))}"` : '');
  const choiceEnd = real ? ',"logprobs":null,"finish_reason":' : ',"finish_reason":';
  const srv = createServer({ keepAliveTimeout: 60_000 }, async (req: IncomingMessage, res: ServerResponse) => {
    const body = await readBody(req);
    if (req.url?.endsWith('/embeddings')) return embeddings(body, res);
    const streamed = body.includes('"stream":true');
    const fail = FAIL_EVERY > 0 && ++served[streamed ? 'stream' : 'json'] % FAIL_EVERY === 0;
    if (!streamed) {
      if (fail) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end('{"error":{"message":"bench mock failure","type":"server_error","param":null,"code":null}}');
        return;
      }
      res.writeHead(200, { ...OPENAI_HEADERS, 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
      res.end(json);
      return;
    }
    // The slow-stream cell's 5,000 connections close with their answers (`bench_close`): kept alive in
    // each target's pool, every target's 5,000 would stay open here at once, past the mock's file limit.
    const close = body.includes('"bench_close":true');
    res.writeHead(200, { ...OPENAI_HEADERS, 'content-type': 'text/event-stream', ...(close ? { connection: 'close' } : {}) });
    if (close) {
      slowStreams.peak = Math.max(slowStreams.peak, ++slowStreams.open);
      res.once('close', () => { slowStreams.open--; });
    }
    // A real model paces its tokens: `bench_pace_ms` in the body (passed through by every target) spaces the chunks.
    const pace = Number(/"bench_pace_ms":(\d+)/.exec(body)?.[1] ?? 0);
    for (let i = 0; i < STREAM_CHUNKS; i++) {
      if (res.destroyed) return;
      res.write(`${head}${i} "}${choiceEnd}null}]${pad(i)}}\n\n`);
      // Let the first chunks leave, so the gateway sees a stream cut mid-way, not a refused request.
      if (fail && i === 4) { setTimeout(() => res.destroy(), 20); return; }
      if (pace) await new Promise((ok) => setTimeout(ok, pace));
    }
    res.write(`data: ${chunkHead}{"index":0,"delta":{}${choiceEnd}"stop"}]${pad(STREAM_CHUNKS)}}\n\n`);
    res.write(`data: ${chunkHead}],"usage":{"prompt_tokens":12,"completion_tokens":20,"total_tokens":32}${real ? ',"obfuscation":"x"' : ''}}\n\n`);
    res.end('data: [DONE]\n\n');
  });
  return listen(srv);
}

async function proxy(upstream: string): Promise<number> {
  // No cap on connections, as sluice by default: a cap would queue the slow streams and measure fewer than are open.
  const pool = new Pool(upstream, { connections: null, pipelining: 1, keepAliveTimeout: 60_000 });
  const srv = createServer({ keepAliveTimeout: 60_000 }, async (req, res) => {
    const body = await readBody(req);
    const up = await pool.request({ path: req.url!, method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${MOCK_KEY}` }, body });
    res.writeHead(up.statusCode, { 'content-type': String(up.headers['content-type']) });
    for await (const chunk of up.body) res.write(chunk);
    res.end();
  });
  return listen(srv);
}

const POLICY: NonNullable<ConfigInput['organizations']>[number]['policy'] = {
  dlp: { detectors: 'all' },
  shield: { builtin: true },
  moderation: { mode: 'buffered', rules: [{ name: 'weapons', category: 'violence', terms: ['make a bomb', 'build a weapon'] }] },
};

/** Gateway threads of the sluice kinds (SLUICE_THREADS). */
const THREADS = Number(process.env.SLUICE_THREADS ?? 1);

/** The gateway as `sluice serve` runs it: one thread in process, or SLUICE_THREADS gateway threads from a config file. */
async function sluice(upstream: string): Promise<{ port: number; key: string; keyId: string }> {
  const input: ConfigInput = {
    // BENCH_TURN_BUDGET_MS prices server.turn_budget_ms (0 turns it off).
    server: { threads: THREADS, ...(process.env.BENCH_TURN_BUDGET_MS ? { turn_budget_ms: Number(process.env.BENCH_TURN_BUDGET_MS) } : {}) },
    // Gateway threads report their own loop delay on /metrics (below), sampled as finely as this process samples its own.
    ...(THREADS > 1 ? { telemetry: { event_loop_resolution_ms: 1 } } : {}),
    providers: { up: {
      kind: 'openai', base_url: `${upstream}/v1`, api_key_env: 'BENCH_UPSTREAM_KEY',
      // The soak turns retries off, so the mock's injected failures reach the caller instead of being retried away.
      ...(process.env.BENCH_RETRY_ATTEMPTS ? { retry: { max_attempts: Number(process.env.BENCH_RETRY_ATTEMPTS) } } : {}),
    } },
    models: [
      { id: 'bench-model', provider: 'up', context_window: 128_000, pricing: { prompt: 1, completion: 2 } },
      { id: 'bench-embed', provider: 'up', type: 'embedding', context_window: 8_192, pricing: { prompt: 0.02, completion: 0 } },
    ],
    organizations: [{ id: 'bench', models: ['bench-model', 'bench-embed'], ...(kind === 'sluice-policy' ? { policy: POLICY } : {}) }],
  };
  // A directory of our own (the spool, or an embedded Postgres) goes with the process; one the caller named stays.
  const ownDir = !process.env.SLUICE_DATA_DIR;
  const dataDir = process.env.SLUICE_DATA_DIR ?? mkdtempSync(join(tmpdir(), 'sluice-bench-'));
  const http = (process.env.SLUICE_HTTP as 'uws' | 'node' | undefined) ?? 'auto';
  const logger = pino({ level: 'warn' });
  let gw: { port: number; databaseUrl: string; close(): Promise<void> };
  if (THREADS > 1) {
    // Gateway threads read their config from a file, as under `sluice serve` (JSON is YAML).
    const configPath = join(dataDir, 'bench.yaml');
    writeFileSync(configPath, JSON.stringify(input));
    gw = await startThreaded({
      config: loadConfig(configPath), configPath, threads: THREADS, databaseUrl: process.env.DATABASE_URL, redisUrl: process.env.SLUICE_BENCH_REDIS_URL,
      dataDir, host: '127.0.0.1', port: 0, http, logLevel: 'warn', log: logger,
    });
  } else {
    gw = await startApp({
      config: buildConfig(input), databaseUrl: process.env.DATABASE_URL, redisUrl: process.env.SLUICE_BENCH_REDIS_URL, dataDir, host: '127.0.0.1', port: 0, http, logger,
      // `sluice-notrace` measures the gateway without its trace pipeline, for the tracing-cost comparison.
      ...(kind === 'sluice-notrace' ? { traceSink: { record() {} } } : {}),
    });
  }
  const pool = new pg.Pool({ connectionString: gw.databaseUrl, max: 1 });
  await ensureOrganizations(pool, ['bench']);
  const { key, id } = await createKey(pool, 'bench', 'bench', 'user');
  await pool.end();
  process.once('disconnect', () => {
    void gw.close().then(() => {
      if (ownDir) rmSync(dataDir, { recursive: true, force: true });
      process.exit(0);
    });
  });
  return { port: gw.port, key, keyId: id };
}

process.env.BENCH_UPSTREAM_KEY = MOCK_KEY;
const [kind, upstream] = process.argv.slice(2);
const loopDelay = monitorEventLoopDelay({ resolution: 1 });
loopDelay.enable();
const ready = kind === 'mock' ? { port: await mock() }
  : kind === 'proxy' ? { port: await proxy(upstream!) }
  : kind === 'uws-floor' ? { port: await uwsFloorProxy(upstream!, MOCK_KEY) }
  : kind === 'net-floor' ? { port: await netFloorProxy(upstream!, MOCK_KEY) }
  : await sluice(upstream!);
// The servers without state to flush leave with their parent; sluice closes gracefully (above).
if (!kind!.startsWith('sluice')) process.once('disconnect', () => process.exit(0));
let peakRss = 0;
setInterval(() => { peakRss = Math.max(peakRss, process.memoryUsage.rss()); }, 100).unref();
/**
 * With gateway threads, the loops that serve are not this process's main one (it writes traces):
 * the delay is the worst gateway's, from their own gauges on /metrics. A scrape also starts their
 * next window. Undefined with one gateway, whose loop is this process's.
 */
async function gatewaysLoopDelayP99Ms(): Promise<number | undefined> {
  if (!kind!.startsWith('sluice') || THREADS <= 1) return undefined;
  const text = await fetch(`http://127.0.0.1:${ready.port}/metrics`).then((r) => r.text(), () => '');
  const p99 = [...text.matchAll(/^nodejs_eventloop_lag_p99_seconds\{thread="\d+"\} (\S+)/gm)].map((m) => Number(m[1]) * 1000);
  return p99.length ? Math.max(...p99) : undefined;
}
process.on('message', async (msg: any) => {
  if (msg?.cmd === 'cpu') process.send!({ cpu: process.cpuUsage() });
  if (msg?.cmd === 'reset-stats') { await gatewaysLoopDelayP99Ms(); loopDelay.reset(); peakRss = process.memoryUsage.rss(); process.send!({ reset: true }); }
  if (msg?.cmd === 'stats') {
    const loopDelayP99Ms = (await gatewaysLoopDelayP99Ms()) ?? loopDelay.percentile(99) / 1e6;
    process.send!({ stats: { rssMb: Math.max(peakRss, process.memoryUsage.rss()) / 2 ** 20, loopDelayP99Ms } });
  }
  if (msg?.cmd === 'rss') process.send!({ rss: process.memoryUsage().rss });
  if (msg?.cmd === 'slow-streams') process.send!({ slowStreams: { ...slowStreams } });
  if (msg?.cmd === 'reset-slow-streams') { slowStreams.peak = slowStreams.open; process.send!({ slowStreams: { ...slowStreams } }); }
});
process.send!({ ready });
