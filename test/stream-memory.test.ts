// A stream can stay open for minutes and its request can be megabytes of
// conversation. Once an upstream has accepted the call the gateway needs none
// of it, so an open stream must not keep the body's bytes, its text, its parse
// or the body it sent upstream. Measured here as the heap and buffer memory
// that 16 open streams with a 1 MB prompt each hold after a full GC. A chat
// stream kept five copies once, a native Responses stream four besides its
// input items (which it stores when it ends). The last copy was the upstream
// client's own of the body it sent (undici held it until the exchange ended;
// sluice's own client lets go of it once written): 1.04-1.07 MB a chat stream
// with that copy, 0.04-0.07 MB without. A non-streamed call that waits on its
// answer keeps what a retry needs (the parsed request and the caller's text)
// and nothing more: it held 4 MB with the body it sent and the client's copy
// of that, 2 MB since.
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

const response = (status: string, output: object[]) => ({
  id: 'resp_held', object: 'response', created_at: 1, model: 'big-model', status, output,
  ...(status === 'completed' ? { usage: { input_tokens: 3, output_tokens: 1, total_tokens: 4 } } : {}),
});
const event = (type: string, fields: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...fields })}\n\n`;
const DONE_MESSAGE = { type: 'message', id: 'msg_held', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'done', annotations: [] }] };

/** Each stream's first event, and its end once released: chat chunks, or typed Responses events. */
const WIRE = {
  chat: {
    first: chunk({ role: 'assistant', content: 'first' }),
    last: chunk({}, 'stop') + 'data: [DONE]\n\n',
    done: 'data: [DONE]',
  },
  responses: {
    first: event('response.created', { sequence_number: 0, response: response('in_progress', []) }),
    last: event('response.completed', { sequence_number: 1, response: response('completed', [DONE_MESSAGE]) }),
    done: 'response.completed',
  },
};

/** A non-streamed call's answer, sent once released. */
const COMPLETION = JSON.stringify({ id: 'chatcmpl-m', object: 'chat.completion', created: 1, model: 'big-model', choices: [{ index: 0, message: { role: 'assistant', content: 'done' }, finish_reason: 'stop' }] });

/**
 * Answers every stream with its first event (`firstChat` for chat streams) and holds it open,
 * and holds every other call unanswered, until released.
 */
async function holdingUpstream(firstChat = WIRE.chat.first) {
  const held: Array<{ res: ServerResponse; last: string }> = [];
  const server = createServer((req, res) => {
    const wire = req.url?.endsWith('/responses') ? WIRE.responses : { ...WIRE.chat, first: firstChat };
    // The flag is in the body's first bytes (the tests put it first); the rest is not kept, as it is the gateway's memory under test.
    let streamed: boolean | undefined;
    req.setEncoding('utf8').on('data', (d: string) => { streamed ??= d.includes('"stream":true'); });
    req.on('end', () => {
      if (!streamed) return void held.push({ res, last: COMPLETION });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(wire.first);
      held.push({ res, last: wire.last });
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** Calls the upstream has read whole and holds. */
    get holding() { return held.length; },
    release() {
      for (const h of held.splice(0)) {
        if (!h.res.headersSent) h.res.writeHead(200, { 'content-type': 'application/json' });
        h.res.end(h.last);
      }
    },
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

/** What the large first chunk case sends before it holds the stream: half a MB of text in its first delta (an event may be 1 MB: upstream.max_event_bytes). */
const LARGE_FIRST = chunk({ role: 'assistant', content: 'x'.repeat(MB / 2) });

interface Case {
  name: string;
  /** What the calls carry that the gateway must not keep. */
  what: string;
  path: string;
  body: (content: string) => object;
  wire: { done: string };
  json?: boolean;
  /** A chat stream's first event, when not the usual small one; the call is under way once all of it was relayed. */
  first?: string;
  limit: number;
}

const CASES: Case[] = [
  {
    name: 'chat completions',
    what: 'a 1 MB prompt each',
    path: '/v1/chat/completions',
    body: (content: string) => ({ stream: true, model: 'big-model', messages: [{ role: 'user', content }] }),
    wire: WIRE.chat,
    // Any copy of the prompt, the gateway's own or its upstream client's, would add about 1 MB.
    limit: 0.5 * MB,
  },
  {
    name: 'chat completions, a large first chunk',
    what: 'a 0.5 MB first delta each',
    path: '/v1/chat/completions',
    body: () => ({ stream: true, model: 'big-model', messages: [{ role: 'user', content: 'hello' }] }),
    wire: WIRE.chat,
    first: LARGE_FIRST,
    // The stream's head (what its later chunks are matched against) was a slice of the first chunk's
    // text, and kept all of it for the stream's life: 0.5 MB a stream.
    limit: 0.25 * MB,
  },
  {
    name: 'chat completions, not streamed',
    what: 'a 1 MB prompt each',
    path: '/v1/chat/completions',
    body: (content: string) => ({ model: 'big-model', messages: [{ role: 'user', content }] }),
    wire: { done: '"chat.completion"' },
    json: true,
    // A retry or fallback builds its body again from the parsed request and the caller's text, so
    // both stay while the call waits; the body sent (a third copy) is kept only for the payload archive.
    limit: 2.5 * MB,
  },
  {
    name: 'native Responses',
    what: 'a 1 MB prompt each',
    path: '/v1/responses',
    body: (content: string) => ({ stream: true, model: 'nat-model', store: false, input: content }),
    wire: WIRE.responses,
    // The input items stay until the stream ends (a stored response keeps them); any copy more adds 1 MB.
    limit: 1.5 * MB,
  },
];

for (const http of HTTP_KINDS) {
  describe(`open calls over ${http}`, () => {
    for (const c of CASES) {
      test(`${c.name}: hold no more than they need, ${STREAMS} calls with ${c.what}`, async (t) => {
        const up = await holdingUpstream(c.first);
        const gw = await startGateway({
          http,
          env: { [UPSTREAM_KEY_ENV]: 'sk-held' },
          config: {
            server: { body_limit_bytes: 4 * MB },
            providers: {
              up: { kind: 'openai', base_url: `${up.url}/v1`, api_key_env: UPSTREAM_KEY_ENV },
              nat: { kind: 'openai', base_url: `${up.url}/v1`, api_key_env: UPSTREAM_KEY_ENV, responses_api: true },
            },
            models: [
              { id: 'big-model', provider: 'up', context_window: 2_000_000, pricing: { prompt: 1, completion: 2 } },
              { id: 'nat-model', provider: 'nat', context_window: 2_000_000, pricing: { prompt: 1, completion: 2 } },
            ],
            organizations: [{ id: 'acme', models: ['big-model', 'nat-model'] }],
          },
        });
        const key = await gw.key();
        const { hostname, port } = new URL(gw.url);
        // A raw client: fetch would keep its own copy of each body for as long as the response runs.
        // A stream's promise settles with its first event; a JSON call's with its answer, once released.
        // `content` is read by no closure: one that captured it would keep the test's own copy while the call waits.
        const send = (content: string) => {
          const req = request({ host: hostname, port, path: c.path, method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } });
          const answer = new Promise<IncomingMessage>((ok, fail) => {
            req.on('response', (res: IncomingMessage) => {
              if (res.statusCode !== 200) return fail(new Error(`status ${res.statusCode}`));
              if (c.json) return ok(res);
              // Under way once the first event went through whole; what follows is read by finish().
              let got = 0;
              const onData = (d: Buffer) => {
                got += d.length;
                if (got < (c.first?.length ?? 1)) return;
                res.off('data', onData);
                ok(res);
              };
              res.on('data', onData);
            });
            req.on('error', fail);
          });
          req.end(JSON.stringify(c.body(content)));
          return answer;
        };
        /** Until the calls are under way: every stream has relayed its first event, every JSON call reached the upstream whole. */
        const underWay = async (calls: Array<Promise<IncomingMessage>>) => {
          if (!c.json) return Promise.all(calls);
          while (up.holding < calls.length) await new Promise((ok) => setTimeout(ok, 10));
          // The gateway has written the whole body: its call now waits on the answer.
          await new Promise((ok) => setTimeout(ok, 50));
          return [];
        };
        const finish = (res: IncomingMessage) => new Promise<string>((ok) => { let s = ''; res.setEncoding('utf8').on('data', (d: string) => { s += d; }).on('end', () => ok(s)); });
        try {
          // One call first, run to its end: what the first request allocates for good is not the calls' cost.
          const warm = send('warm up');
          await underWay([warm]);
          up.release();
          await finish(await warm);

          const before = heldBytes();
          // Each prompt its own string, as each caller's would be.
          const calls = Array.from({ length: STREAMS }, (_, i) => send(`${i} `.padEnd(PROMPT_BYTES, 'x')));
          await underWay(calls);
          const perStream = (heldBytes() - before) / STREAMS;
          t.diagnostic(`${(perStream / MB).toFixed(3)} MB per open call`);
          up.release();
          const tails = await Promise.all(calls.map(async (r) => finish(await r)));
          assert.ok(tails.every((t) => t.includes(c.wire.done)), 'every call ends once released');
          assert.ok(perStream < c.limit, `an open call holds ${(perStream / MB).toFixed(2)} MB with ${c.what}`);
        } finally {
          up.release();
          await gw.close();
          await up.close();
        }
      });
    }
  });
}
