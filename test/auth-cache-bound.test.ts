// The key cache's bound (auth.cache_size) is a cap on the keys it holds, not
// memory it takes up front: lru-cache preallocates storage for `max` entries,
// about 5 MB per gateway thread at the default 100,000, held by a gateway
// with a handful of keys. The cache is bounded by size instead.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Authenticator, type KeyLookup } from '../src/auth/authenticator.js';
import { newKeyMaterial } from '../src/auth/key-format.js';
import type { KeyRecord } from '../src/store/api-keys-repo.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function tier() {
  const records = new Map<string, KeyRecord>();
  const state = { calls: 0 };
  const lookup: KeyLookup = { async lookup(hash) { state.calls++; return records.get(hash.toString('hex')) ?? null; } };
  const key = () => {
    const m = newKeyMaterial();
    const rec: KeyRecord = { id: m.id, organization_id: 'acme', name: 'k', role: 'user' };
    records.set(m.hash.toString('hex'), rec);
    return `Bearer ${m.secret}`;
  };
  return { lookup, state, key };
}

const options = (maxEntries: number) => ({ ttlMs: 60_000, maxEntries, flushEveryMs: 60_000, flushLastUsed: async () => {} });

test('the key cache holds at most auth.cache_size keys, the least recently used going first', async () => {
  const t = tier();
  const auth = new Authenticator(t.lookup, options(3));
  const keys = [t.key(), t.key(), t.key(), t.key()];
  for (const k of keys) await auth.authenticate(k);
  assert.equal(t.state.calls, 4);
  // The three most recent are cached: no lookup.
  for (const k of keys.slice(1)) assert.ok(!(auth.authenticate(k) instanceof Promise), 'a cached key answers at once');
  assert.equal(t.state.calls, 4);
  // The first was evicted to make room for the fourth: it is looked up again.
  await auth.authenticate(keys[0]);
  assert.equal(t.state.calls, 5);
});

test('an empty key cache with the default bound takes no memory up front', () => {
  const t = tier();
  gc();
  const before = process.memoryUsage();
  const auth = new Authenticator(t.lookup, options(100_000));
  gc();
  const after = process.memoryUsage();
  const bytes = after.heapUsed + after.arrayBuffers - before.heapUsed - before.arrayBuffers;
  assert.ok(auth);
  // Preallocated, 100,000 entries took 4.4 MB of arrays.
  assert.ok(bytes < 512 * 1024, `a new key cache took ${(bytes / 1024).toFixed(0)} KB`);
});
