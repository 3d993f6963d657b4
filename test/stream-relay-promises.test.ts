// A gateway holds thousands of streams that wait on their models, and each
// chunk arrives on its own. The relay is pushed each upstream read
// (src/upstream/stream-batches.ts): relaying a chunk makes no promise. A relay
// that awaited its next batch made three or more per chunk (the read's
// promise, its resolvers, the awaits of the frames above it), garbage that
// lived until the next chunk, and that a burst of arriving streams promoted
// to the old generation. Counted here with a promise hook over chunks that
// the upstream writes one at a time, each read by the client before the next.
// Nor does an open stream hold a promise: its relay ends the request itself
// (ctx.end), where a chain of promises from the relay's up to the front
// door's (7 a chat stream, 10 a Responses stream) waited for the stream's end
// and lived as long as the stream.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHook } from 'node:async_hooks';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HTTP_KINDS, startGateway } from './helpers/gateway.js';
import { chatAndNativeUpstreams, UPSTREAM_KEY_ENV } from './helpers/fixtures.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

const STREAMS = 20;
const CHUNKS = 10;

const chatChunk = (text: string, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-p', object: 'chat.completion.chunk', created: 1, model: 'up-model', choices: [{ index: 0, delta: finish ? {} : { content: text }, finish_reason: finish }] })}\n\n`;
const typed = (type: string, fields: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...fields })}\n\n`;
const response = (status: string) => ({ id: 'resp_p', object: 'response', created_at: 1, model: 'up-model', status, output: [] });

/** What the upstream writes: the first event, one per tick, and the end. */
const WIRE = {
  chat: {
    first: chatChunk('first'),
    tick: (i: number) => chatChunk(` tok${i}`),
    last: chatChunk('', 'stop') + 'data: [DONE]\n\n',
  },
  responses: {
    first: typed('response.created', { sequence_number: 0, response: response('in_progress') }),
    tick: (i: number) => typed('response.output_text.delta', { sequence_number: i + 1, item_id: 'msg_p', output_index: 0, content_index: 0, delta: ` tok${i}` }),
    last: typed('response.completed', { sequence_number: 99, response: { ...response('completed'), usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } } }),
  },
};

/** Holds every stream open after its first event; tick() writes one more event to each. */
async function tickingUpstream() {
  const open: Array<{ res: ServerResponse; wire: typeof WIRE.chat }> = [];
  const server = createServer((req, res) => {
    const wire = req.url?.endsWith('/responses') ? WIRE.responses : WIRE.chat;
    req.resume().on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(wire.first);
      open.push({ res, wire });
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    tick(i: number) { for (const o of open) o.res.write(o.wire.tick(i)); },
    end() { for (const o of open.splice(0)) o.res.end(o.wire.last); },
    close: () => new Promise<void>((ok) => { server.closeAllConnections(); server.close(() => ok()); }),
  };
}

const CASES = [
  { name: 'chat completions', path: '/v1/chat/completions', body: { model: 'up-model', stream: true, messages: [{ role: 'user', content: 'hi' }] }, marker: 'tok' },
  { name: 'Responses, translated from chat', path: '/v1/responses', body: { model: 'up-model', stream: true, store: false, input: 'hi' }, marker: 'tok' },
  { name: 'Responses, native', path: '/v1/responses', body: { model: 'nat-model', stream: true, store: false, input: 'hi' }, marker: 'tok' },
];

for (const http of HTTP_KINDS) {
  describe(`relaying chunks over ${http}`, () => {
    for (const c of CASES) {
      test(`${c.name}: an open stream holds no promise and a chunk is relayed without one, ${STREAMS} streams × ${CHUNKS} chunks`, async () => {
        const up = await tickingUpstream();
        const gw = await startGateway({
          http,
          env: { [UPSTREAM_KEY_ENV]: 'sk-tick' },
          config: { ...chatAndNativeUpstreams(up.url), organizations: [{ id: 'acme', models: ['up-model', 'nat-model'] }] },
        });
        const key = await gw.key();
        const { hostname, port } = new URL(gw.url);
        // Promises made from the first request on and not yet settled.
        const pending = new Set<number>();
        const pendingHook = createHook({
          init(id, type) { if (type === 'PROMISE') pending.add(id); },
          promiseResolve(id) { pending.delete(id); },
        }).enable();
        // Callbacks, not promises, on the client's side of the window counted below.
        let seen = 0;
        let waiting: { want: number; ok: () => void } | undefined;
        const bodies: string[] = Array.from({ length: STREAMS }, () => '');
        const ended: Array<Promise<void>> = [];
        const saw = () => { if (waiting && ++seen >= waiting.want) waiting.ok(); };
        const until = (want: number) => new Promise<void>((ok) => { if (seen >= want) ok(); else waiting = { want, ok }; });
        for (let i = 0; i < STREAMS; i++) {
          ended.push(new Promise<void>((ok, fail) => {
            const req = request({ host: hostname, port, path: c.path, method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } }, (res: IncomingMessage) => {
              if (res.statusCode !== 200) return fail(new Error(`status ${res.statusCode}`));
              res.setEncoding('utf8');
              res.on('data', (d: string) => {
                // A tick's event is its own read on a quiet loopback, so counting reads that carry one counts chunks relayed.
                if (d.includes(c.marker)) saw(); else if (!bodies[i]) saw();
                bodies[i] += d;
              });
              res.on('end', ok);
            });
            req.on('error', fail);
            req.end(JSON.stringify(c.body));
          }));
        }
        let created = 0;
        const hook = createHook({ init(_id, type) { if (type === 'PROMISE') created++; } });
        try {
          await until(STREAMS);
          pendingHook.disable();
          // The test's own: one per stream for its end.
          const held = pending.size - STREAMS;
          assert.ok(held < STREAMS / 2, `${held} promises pending with ${STREAMS} streams open`);
          seen = 0;
          hook.enable();
          for (let i = 0; i < CHUNKS; i++) {
            up.tick(i);
            await until((i + 1) * STREAMS);
          }
          hook.disable();
          up.end();
          await Promise.all(ended);
          for (const b of bodies) for (let i = 0; i < CHUNKS; i++) assert.ok(b.includes(`tok${i}`), `every stream relayed chunk ${i}`);
          // The test's own waits make a few promises a tick: that is all the window may hold.
          const perChunk = created / (STREAMS * CHUNKS);
          assert.ok(perChunk < 0.5, `${created} promises made relaying ${STREAMS * CHUNKS} chunks (${perChunk.toFixed(2)} a chunk)`);
        } finally {
          pendingHook.disable();
          hook.disable();
          up.end();
          await gw.close();
          await up.close();
        }
      });
    }
  });
}
