// An upstream stream's bytes become text exactly once, however the reads fall:
// a character whose UTF-8 bytes are split between two chunked frames arrives
// whole, also when the reads before split none (a stream makes its decoder
// only then), and a byte-order mark before the first event (which SSE drops)
// does not spoil that event.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startGateway, type TestGateway } from './helpers/gateway.js';
import { oneUpstreamConfig, readSse, UPSTREAM_KEY_ENV } from './helpers/fixtures.js';
import { stopTestPostgres } from './helpers/pg.js';

/** Two-, three- and four-byte characters, each of which the upstream below splits between writes. */
const TEXT = 'é€😀 and ✓';

const chunk = (delta: object, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'up-1', object: 'chat.completion.chunk', created: 1, model: 'up-model', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

let upstream: Server;
let gw: TestGateway;
let key: string;

before(async () => {
  upstream = createServer(async (req, res) => {
    let body = '';
    for await (const part of req) body += part;
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const pause = () => new Promise((ok) => setTimeout(ok, 5));
    // Unless asked for a late split, a BOM comes first, cut inside.
    const late = body.includes('late split');
    if (late) {
      // Whole events first: the gateway decodes reads that end on a whole character without a decoder, and makes one only now.
      res.write(chunk({ role: 'assistant', content: '' }));
      await pause();
    }
    // Every write is one chunked frame, and the pauses keep them separate reads.
    const bytes = Buffer.concat([...(late ? [] : [Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(chunk({ role: 'assistant', content: '' }))]), Buffer.from(chunk({ content: TEXT }))]);
    // Cut inside the BOM and then inside every multi-byte character of TEXT.
    const text = bytes.toString('latin1');
    const cuts = [...(late ? [] : [1]), ...[...TEXT].filter((c) => c.length > 1 || c.charCodeAt(0) > 0x7f).map((c) => text.indexOf(Buffer.from(c).toString('latin1')) + 1)];
    let at = 0;
    for (const cut of cuts) {
      res.write(bytes.subarray(at, cut));
      at = cut;
      await pause();
    }
    res.write(bytes.subarray(at));
    res.write(chunk({}, 'stop'));
    res.end('data: [DONE]\n\n');
  });
  await new Promise<void>((ok) => upstream.listen(0, '127.0.0.1', ok));
  gw = await startGateway({
    config: oneUpstreamConfig(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`),
    env: { [UPSTREAM_KEY_ENV]: 'sk-test' },
  });
  key = await gw.key();
});

// One hook, in this order: after hooks run as registered, and the gateway drops its database on close,
// which fails once an embedded Postgres (no DATABASE_URL) has been stopped.
after(async () => {
  await gw?.close();
  await new Promise((ok) => upstream?.close(ok));
  await stopTestPostgres();
});

for (const [name, prompt] of [['and a leading BOM', 'hi'], ['after reads that split none', 'late split']]) {
  test(`characters split between upstream reads, ${name}, reach the caller intact`, async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'up-model', stream: true, messages: [{ role: 'user', content: prompt }] }),
    });
    assert.equal(res.status, 200);
    const events = await readSse(res);
    assert.equal(events.at(-1), 'data: [DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice('data: '.length)));
    assert.equal(chunks[0].choices[0].delta.role, 'assistant', 'the event after the BOM is parsed, not dropped');
    const content = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
    assert.equal(content, TEXT);
    assert.ok(!content.includes('\ufffd'));
  });
}
