// How a gateway thread hands its traces to the main thread's writer: COPY
// lines for plain rows, whole rows where the writer must see more, and few
// messages, since each one wakes the main thread.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { ThreadLink } from '../src/threads/thread-link.js';
import type { FromThread } from '../src/threads/protocol.js';
import { decodeTraceRow } from '../src/traces/copy-encoder.js';
import { sampleTrace } from './helpers/trace-fixtures.js';
import { MessageChannel } from 'node:worker_threads';
import { RequestContext } from '../src/pipeline/request-context.js';

type Traces = Extract<FromThread, { type: 'traces' }>;

function link(): { link: ThreadLink; sent: Traces[] } {
  const sent: Traces[] = [];
  return { sent, link: new ThreadLink({ postMessage: (m) => { if (m.type === 'traces') sent.push(m); } }, 0) };
}

const lines = (m: Traces) => m.lines.split('\n').filter(Boolean).map(decodeTraceRow);

test('rows wait briefly and leave together, as COPY lines with their created_at', async () => {
  const { link: l, sent } = link();
  const rows = [sampleTrace(), sampleTrace({ model: 'tab\there' }), sampleTrace()];
  for (const r of rows) l.record(r);
  await new Promise((ok) => setImmediate(ok));
  assert.equal(sent.length, 0, 'not one message per loop turn');
  await sleep(30);
  assert.equal(sent.length, 1);
  assert.deepEqual(lines(sent[0]!), rows.map((r) => ({ ...r, attempts: null })));
  assert.deepEqual(sent[0]!.created, rows.map((r) => r.created_at));
  assert.deepEqual(sent[0]!.rows, []);
});

test('a full message leaves at once; close() sends what is left', () => {
  const { link: l, sent } = link();
  for (let i = 0; i < 500; i++) l.record(sampleTrace());
  assert.equal(sent.length, 1);
  assert.equal(sent[0]!.created.length, 500);
  l.record(sampleTrace());
  l.close();
  assert.equal(sent.length, 2);
  assert.equal(lines(sent[1]!).length, 1);
});

test('a row with a payload, or without an organisation, goes whole', () => {
  const { link: l, sent } = link();
  const withPayload = sampleTrace({ payload: '{"request":{"a":1},"response":{"b":2}}' });
  const orphan = sampleTrace({ organization_id: '' });
  l.record(withPayload);
  l.record(orphan);
  l.record(sampleTrace());
  l.close();
  assert.equal(sent.length, 1);
  assert.deepEqual(sent[0]!.rows, [withPayload, orphan]);
  assert.equal(sent[0]!.created.length, 1);
});

test('a payload nested thousands of levels deep crosses to the writer as its text: one structured clone of the objects ran out of stack, and the batch with it', () => {
  const deep = JSON.parse(`${'['.repeat(4500)}"x"${']'.repeat(4500)}`) as unknown;
  const ctx = new RequestContext('chat');
  ctx.key = { id: 'key_1', organization_id: 'org_1' } as RequestContext['key'];
  ctx.trace.payload = { request: { messages: deep }, response: { ok: true } };
  const trace = ctx.toTrace()!;
  // Its JSON, or, past JSON.stringify's own stack, the archive's error note: text either way.
  assert.equal(typeof trace.payload, 'string');
  const { port1, port2 } = new MessageChannel();
  try {
    const posted: unknown[] = [];
    const l = new ThreadLink({ postMessage: (m) => { port1.postMessage(m); posted.push(m); } }, 0);
    l.record(trace);
    l.record(sampleTrace());
    assert.doesNotThrow(() => l.close());
    assert.equal(posted.length, 1, 'the batch went, both rows in it');
  } finally {
    port1.close();
    port2.close();
  }
});
