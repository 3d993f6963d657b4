// The signal every request's upstream call listens to for the caller leaving.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ClientSignal } from '../src/http/client-signal.js';

test('abort calls each listener once, in order; off removes one; abort is idempotent', () => {
  const s = new ClientSignal();
  const calls: string[] = [];
  const a = () => calls.push('a');
  const b = () => calls.push('b');
  const c = () => calls.push('c');
  s.once('abort', a);
  s.once('abort', b);
  s.once('abort', c);
  s.off('abort', b);
  s.off('abort', () => calls.push('never added'));
  s.abort();
  s.abort();
  assert.deepEqual(calls, ['a', 'c']);
  assert.equal(s.aborted, true);
});

test('a listener added while listeners run, or after the abort, is not called', () => {
  const s = new ClientSignal();
  let late = 0;
  s.once('abort', () => s.once('abort', () => { late++; }));
  s.abort();
  s.once('abort', () => { late++; });
  s.abort();
  assert.equal(late, 0);
});

test('one listener, then a second, then removals: each still called exactly when it should be', () => {
  const calls: string[] = [];
  const a = () => calls.push('a');
  const b = () => calls.push('b');

  const alone = new ClientSignal();
  alone.once('abort', a);
  alone.off('abort', b);
  alone.abort();
  assert.deepEqual(calls.splice(0), ['a'], 'removing another listener leaves the one');

  const removed = new ClientSignal();
  removed.once('abort', a);
  removed.off('abort', a);
  removed.once('abort', b);
  removed.abort();
  assert.deepEqual(calls.splice(0), ['b'], 'the only listener removed, then another added');

  const pair = new ClientSignal();
  pair.once('abort', a);
  pair.once('abort', b);
  pair.off('abort', a);
  pair.abort();
  assert.deepEqual(calls.splice(0), ['b'], 'the first of two removed');
});
