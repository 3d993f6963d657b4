// Every upstream connection of a thread reads into one buffer (h1/connection.ts),
// so bytes a call keeps past a read must be copied: a JSON answer or an error
// body that arrives in several reads, while other calls' reads land in the same
// buffer between them, must reach its caller as the upstream wrote it.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HTTP_KINDS, startGateway } from './helpers/gateway.js';
import { oneUpstreamConfig, UPSTREAM_KEY_ENV } from './helpers/fixtures.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

const CALLS = 12;
/** Long enough that a read of it and a read of another answer overlap in the buffer. */
const filler = (i: number) => `call ${i} `.repeat(200);

/**
 * Answers call i (named by its last message) in two writes 40 ms apart, each
 * its own read at the gateway; even calls get a completion, odd ones a 400
 * with an OpenAI error body, half of each with a content-length and half
 * chunked (two ways of holding a body). The calls arrive together, so every
 * call's second read comes after the other calls' first ones.
 */
async function splittingUpstream(): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => { text += c; });
    req.on('end', () => {
      const i = Number(/call (\d+)/.exec(text)?.[1]);
      const body = i % 2 === 0
        ? JSON.stringify({ id: `c${i}`, object: 'chat.completion', created: 1, model: 'up-model', choices: [{ index: 0, message: { role: 'assistant', content: filler(i) }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } })
        : JSON.stringify({ error: { message: filler(i), type: 'invalid_request_error', param: null, code: null } });
      const bytes = Buffer.from(body);
      res.writeHead(i % 2 === 0 ? 200 : 400, { 'content-type': 'application/json', ...(i % 4 < 2 ? { 'content-length': bytes.length } : {}) });
      res.write(bytes.subarray(0, bytes.length >> 1));
      setTimeout(() => res.end(bytes.subarray(bytes.length >> 1)), 40);
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((ok) => { server.closeAllConnections(); server.close(() => ok()); }),
  };
}

for (const http of HTTP_KINDS) {
  describe(`answers split over upstream reads, over ${http}`, () => {
    test('completions and error bodies in two reads each, interleaved with other calls\' reads, arrive as written', async () => {
      const up = await splittingUpstream();
      const gw = await startGateway({ http, config: oneUpstreamConfig(up.url), env: { [UPSTREAM_KEY_ENV]: 'sk-split' } });
      try {
        const key = await gw.key();
        const results = await Promise.all(Array.from({ length: CALLS }, async (_, i) => {
          const r = await fetch(`${gw.url}/v1/chat/completions`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: JSON.stringify({ model: 'up-model', messages: [{ role: 'user', content: `call ${i}` }] }),
          });
          return { i, status: r.status, body: await r.json() as { choices?: Array<{ message: { content: string } }>; error?: { message: string } } };
        }));
        for (const { i, status, body } of results) {
          if (i % 2 === 0) {
            assert.equal(status, 200, `call ${i}: ${JSON.stringify(body).slice(0, 200)}`);
            assert.equal(body.choices?.[0]?.message.content, filler(i));
          } else {
            assert.equal(status, 400, `call ${i}: ${JSON.stringify(body).slice(0, 200)}`);
            assert.ok(body.error?.message.includes(filler(i).trim()), `call ${i}: ${body.error?.message.slice(0, 200)}`);
          }
        }
      } finally {
        await gw.close();
        await up.close();
      }
    });
  });
}
