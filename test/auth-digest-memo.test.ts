// The authenticator remembers each valid key's digest by its token, to spare a
// SHA-256 per request. The digest only names the cache entry: revocation,
// expiry and unknown keys are still decided by the cache on every request.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Authenticator, type KeyLookup } from '../src/auth/authenticator.js';
import { newKeyMaterial } from '../src/auth/key-format.js';
import type { KeyRecord } from '../src/store/api-keys-repo.js';

function tier() {
  const records = new Map<string, KeyRecord>();
  const state = { calls: 0 };
  const lookup: KeyLookup = { async lookup(hash) { state.calls++; return records.get(hash.toString('hex')) ?? null; } };
  const key = (id: string) => {
    const m = newKeyMaterial();
    records.set(m.hash.toString('hex'), { id, organization_id: 'acme', name: id, role: 'user' });
    return { header: `Bearer ${m.secret}`, hash: m.hash };
  };
  return { lookup, state, key, records };
}

const options = (maxEntries: number) => ({ ttlMs: 60_000, maxEntries, flushEveryMs: 60_000, flushLastUsed: async () => {} });

test('a remembered key that is revoked is refused at once', async () => {
  const t = tier();
  const auth = new Authenticator(t.lookup, options(10));
  const k = t.key('k1');
  assert.equal((await auth.authenticate(k.header)).id, 'k1');
  for (let i = 0; i < 3; i++) assert.equal((auth.authenticate(k.header) as KeyRecord).id, 'k1');
  auth.invalidate(k.hash);
  assert.throws(() => auth.authenticate(k.header), /Invalid or revoked/);
  assert.equal(t.state.calls, 1);
});

test('keys remembered past the bound still answer as themselves, and an unknown token never names a known key', async () => {
  const t = tier();
  const auth = new Authenticator(t.lookup, options(2));
  const keys = [t.key('a'), t.key('b'), t.key('c')];
  for (let round = 0; round < 3; round++) {
    for (const [i, k] of keys.entries()) assert.equal((await auth.authenticate(k.header)).id, ['a', 'b', 'c'][i]);
  }
  // A token one character off a remembered one is another token: looked up, and refused.
  const near = keys[2]!.header.slice(0, -1) + (keys[2]!.header.endsWith('A') ? 'B' : 'A');
  await assert.rejects(async () => auth.authenticate(near), /Invalid or revoked/);
  assert.throws(() => auth.authenticate(near), /Invalid or revoked/);
});
