// Request ids are UUIDv7s: unique, and ordered by the millisecond they were
// made in, so that trace rows (keyed by them) append to the primary-key index.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { hex48, newRequestId } from '../src/pipeline/request-context.js';
import { REQUEST_ID } from './helpers/fixtures.js';

test('a request id is req_ and a UUIDv7 of the moment it was made', () => {
  const before = Date.now();
  const id = newRequestId();
  const after = Date.now();
  const m = REQUEST_ID.exec(id);
  assert.ok(m, id);
  const ms = parseInt(m[1]!, 16);
  assert.ok(ms >= before && ms <= after, `${ms} outside ${before}..${after}`);
});

test('ids made in a later millisecond sort after every earlier one', async () => {
  const first = Array.from({ length: 500 }, newRequestId);
  await sleep(3);
  const second = Array.from({ length: 500 }, newRequestId);
  const lastOfFirst = first.reduce((a, b) => (a > b ? a : b));
  for (const id of second) assert.ok(id > lastOfFirst, `${id} sorts before ${lastOfFirst}`);
});

test('ids made in one millisecond sort in the order they were made', () => {
  // Each round from a fresh millisecond, and fewer ids than the 2,048 the counter takes before it could wrap in one
  // (a thread would need two million requests a second for that).
  for (let round = 0; round < 50; round++) {
    for (const t = Date.now(); Date.now() === t;);
    const ids = Array.from({ length: 1_000 }, newRequestId);
    for (let i = 1; i < ids.length; i++) assert.ok(ids[i]! > ids[i - 1]!, `${ids[i]} made after ${ids[i - 1]}`);
  }
});

test('ids do not repeat, even many within one millisecond', () => {
  const n = 200_000;
  const ids = new Set(Array.from({ length: n }, newRequestId));
  assert.equal(ids.size, n);
});

test('the time part is the millisecond in 12 hex digits, at every byte boundary', () => {
  for (const n of [0, 1, 0xff, 0x100, 0xffffff, 0x1000000, 0x1000001, 0xffffffffff, 2 ** 48 - 1, 1_790_000_000_000, Date.now()]) {
    assert.equal(hex48(n), n.toString(16).padStart(12, '0'), String(n));
  }
});
