// A stream can stay open for minutes and its request can be megabytes of
// conversation. Once an upstream has accepted the call the gateway needs none
// of it, so an open stream must not keep the body's bytes, its text, its parse
// or the body it sent upstream. Measured here as the heap and buffer memory
// that 16 open streams with a 1 MB prompt each hold after a full GC. undici
// keeps its own copy of the body it sent until the exchange ends (about 1 MB a
// stream); the gateway kept four more before.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { HTTP_KINDS, startGateway } from './helpers/gateway.js';
import { UPSTREAM_KEY_ENV } from './helpers/fixtures.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const STREAMS = 16;
const PROMPT_BYTES = 1024 * 1024;
const MB = 1024 * 1024;

const chunk = (delta: object, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-m', object: 'chat.completion.chunk', created: 1, model: 'big-model', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

/** Answers every stream with one chunk, then holds it open until released. */
async function holdingStreams() {
  const held: ServerResponse[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(chunk({ role: 'assistant', content: 'first' }));
      held.push(res);
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    release() { for (const res of held.splice(0)) res.end(chunk({}, 'stop') + 'data: [DONE]\n\n'); },
    close: () => new Promise<void>((ok) => { server.closeAllConnections(); server.close(() => ok()); }),
  };
}

/** Memory the process holds after a full collection: V8's heap and the bytes of every Buffer. */
function heldBytes(): number {
  gc();
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

for (const http of HTTP_KINDS) {
  describe(`open streams over ${http}`, () => {
    test(`hold no copy of their request: ${STREAMS} streams with a 1 MB prompt each`, async () => {
      const up = await holdingStreams();
      const gw = await startGateway({
        http,
        env: { [UPSTREAM_KEY_ENV]: 'sk-held' },
        config: {
          server: { body_limit_bytes: 4 * MB },
          providers: { up: { kind: 'openai', base_url: `${up.url}/v1`, api_key_env: UPSTREAM_KEY_ENV } },
          models: [{ id: 'big-model', provider: 'up', context_window: 2_000_000, pricing: { prompt: 1, completion: 2 } }],
          organizations: [{ id: 'acme', models: ['big-model'] }],
        },
      });
      const key = await gw.key();
      const { hostname, port } = new URL(gw.url);
      // A raw client: fetch would keep its own copy of each body for as long as the response runs.
      const open = (content: string) => new Promise<IncomingMessage>((ok, fail) => {
        const body = JSON.stringify({ model: 'big-model', stream: true, messages: [{ role: 'user', content }] });
        const req = request({ host: hostname, port, path: '/v1/chat/completions', method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } }, (res) => {
          if (res.statusCode !== 200) return fail(new Error(`status ${res.statusCode}`));
          res.once('data', () => ok(res));
        });
        req.on('error', fail);
        req.end(body);
      });
      const finish = (res: IncomingMessage) => new Promise<string>((ok) => { let s = ''; res.setEncoding('utf8').on('data', (c: string) => { s += c; }).on('end', () => ok(s)); });
      try {
        // One stream first, run to its end: what the first request allocates for good is not the streams' cost.
        const warm = await open('warm up');
        up.release();
        await finish(warm);

        const before = heldBytes();
        // Each prompt its own string, as each caller's would be.
        const responses = await Promise.all(Array.from({ length: STREAMS }, (_, i) => open(`${i} `.padEnd(PROMPT_BYTES, 'x'))));
        const perStream = (heldBytes() - before) / STREAMS;
        up.release();
        const tails = await Promise.all(responses.map(finish));
        assert.ok(tails.every((t) => t.includes('data: [DONE]')), 'every stream ends once released');
        // undici's copy of the body sent is about 1 MB; each copy of the gateway's own would add another.
        assert.ok(perStream < 1.5 * MB, `an open stream holds ${(perStream / MB).toFixed(2)} MB for a 1 MB prompt`);
      } finally {
        up.release();
        await gw.close();
        await up.close();
      }
    });
  });
}
