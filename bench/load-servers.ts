// Child-process entry for bench/load.ts: one of the three servers under test,
// each in its own process so its CPU time can be read in isolation.
//   mock   - a bare OpenAI-compatible upstream (JSON, or a 20-chunk stream)
//   proxy  - a logic-free node:http proxy to the mock, over an undici pool
//   sluice - the gateway, with the mock as its upstream
//   sluice-notrace - the same, with the trace pipeline replaced by a no-op sink
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Pool } from 'undici';
import { startApp } from '../src/app.js';
import { buildConfig } from '../src/config/load-config.js';
import { createKey, ensureOrganizations } from '../src/store/api-keys-repo.js';

export const STREAM_CHUNKS = 20;
const MOCK_KEY = 'bench-upstream-key';

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((ok) => { let s = ''; req.on('data', (c) => { s += c; }); req.on('end', () => ok(s)); });
}

const listen = (srv: ReturnType<typeof createServer>) => new Promise<number>((ok) => srv.listen(0, '127.0.0.1', () => ok((srv.address() as AddressInfo).port)));

async function mock(): Promise<number> {
  const json = JSON.stringify({ id: 'chatcmpl-b', object: 'chat.completion', created: 1, model: 'bench-model', choices: [{ index: 0, message: { role: 'assistant', content: 'hello from the bench mock' }, finish_reason: 'stop' }], usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 } });
  const head = 'data: {"id":"chatcmpl-b","object":"chat.completion.chunk","created":1,"model":"bench-model","choices":[{"index":0,"delta":{"content":"tok ';
  const srv = createServer({ keepAliveTimeout: 60_000 }, async (req: IncomingMessage, res: ServerResponse) => {
    const body = await readBody(req);
    if (!body.includes('"stream":true')) {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
      res.end(json);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (let i = 0; i < STREAM_CHUNKS; i++) res.write(`${head}${i} "},"finish_reason":null}]}\n\n`);
    res.write('data: {"id":"chatcmpl-b","object":"chat.completion.chunk","created":1,"model":"bench-model","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n');
    res.write('data: {"id":"chatcmpl-b","object":"chat.completion.chunk","created":1,"model":"bench-model","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":20,"total_tokens":32}}\n\n');
    res.end('data: [DONE]\n\n');
  });
  return listen(srv);
}

async function proxy(upstream: string): Promise<number> {
  const pool = new Pool(upstream, { connections: 256, pipelining: 1, keepAliveTimeout: 60_000 });
  const srv = createServer({ keepAliveTimeout: 60_000 }, async (req, res) => {
    const body = await readBody(req);
    const up = await pool.request({ path: req.url!, method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${MOCK_KEY}` }, body });
    res.writeHead(up.statusCode, { 'content-type': String(up.headers['content-type']) });
    for await (const chunk of up.body) res.write(chunk);
    res.end();
  });
  return listen(srv);
}

async function sluice(upstream: string): Promise<{ port: number; key: string }> {
  const app = await startApp({
    config: buildConfig({
      providers: { up: { kind: 'openai', base_url: `${upstream}/v1`, api_key_env: 'BENCH_UPSTREAM_KEY' } },
      models: [{ id: 'bench-model', provider: 'up', context_window: 128_000, pricing: { prompt: 1, completion: 2 } }],
      organizations: [{ id: 'bench', models: ['bench-model'] }],
    }),
    databaseUrl: process.env.DATABASE_URL,
    dataDir: process.env.SLUICE_DATA_DIR ?? mkdtempSync(join(tmpdir(), 'sluice-bench-')),
    host: '127.0.0.1',
    port: 0,
    http: (process.env.SLUICE_HTTP as 'uws' | 'node' | undefined) ?? 'auto',
    logger: pino({ level: 'warn' }),
    // `sluice-notrace` measures the gateway without its trace pipeline, for the tracing-cost comparison.
    ...(kind === 'sluice-notrace' ? { traceSink: { record() {} } } : {}),
  });
  await ensureOrganizations(app.services.pool, ['bench']);
  const { key } = await createKey(app.services.pool, 'bench', 'bench', 'user');
  process.once('disconnect', () => { void app.close().then(() => process.exit(0)); });
  return { port: app.port, key };
}

process.env.BENCH_UPSTREAM_KEY = MOCK_KEY;
const [kind, upstream] = process.argv.slice(2);
const ready = kind === 'mock' ? { port: await mock() } : kind === 'proxy' ? { port: await proxy(upstream!) } : await sluice(upstream!);
process.on('message', (msg: any) => {
  if (msg?.cmd === 'cpu') process.send!({ cpu: process.cpuUsage() });
});
process.send!({ ready });
