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
  const withPayload = sampleTrace({ payload: { request: { a: 1 }, response: { b: 2 } } });
  const orphan = sampleTrace({ organization_id: '' });
  l.record(withPayload);
  l.record(orphan);
  l.record(sampleTrace());
  l.close();
  assert.equal(sent.length, 1);
  assert.deepEqual(sent[0]!.rows, [withPayload, orphan]);
  assert.equal(sent[0]!.created.length, 1);
});
