// The Authenticator's stale-if-error rules, against a lookup tier the test
// drives: a stale record answers only when the tier fails, never instead of
// its answer; an unknown key never becomes stale-valid; and a revocation wins
// over every copy, including a lookup that was in flight when it landed. Also
// its refresh ahead: a key in use is renewed in the background, so no request
// of it waits for the tier.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Authenticator, StaleKeyRecord, type KeyLookup } from '../src/auth/authenticator.js';
import { newKeyMaterial } from '../src/auth/key-format.js';
import type { KeyRecord } from '../src/store/api-keys-repo.js';
import { GatewayError } from '../src/errors.js';

const TTL = 40;
const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

/** A tier whose answer the test sets: a record map, or down. */
function tier() {
  const records = new Map<string, KeyRecord>();
  const state = { down: false, calls: 0, gate: undefined as Promise<void> | undefined, stale: undefined as KeyRecord | undefined };
  const lookup: KeyLookup = {
    async lookup(hash) {
      state.calls++;
      await state.gate;
      if (state.down) throw state.stale ? new StaleKeyRecord(state.stale, { cause: new Error('down') }) : new Error('ECONNREFUSED');
      return records.get(hash.toString('hex')) ?? null;
    },
  };
  return { records, state, lookup };
}

function key(org = 'acme') {
  const m = newKeyMaterial();
  const rec: KeyRecord = { id: m.id, organization_id: org, name: 'k', role: 'user' };
  return { header: `Bearer ${m.secret}`, hash: m.hash, rec };
}

const code = async (f: () => unknown): Promise<string> => {
  try { await f(); return 'ok'; } catch (err) { return (err as GatewayError).code; }
};

function make(t: ReturnType<typeof tier>, staleIfErrorMs = 60_000, ttlMs = TTL) {
  return new Authenticator(t.lookup, { ttlMs, staleIfErrorMs, maxEntries: 100, flushEveryMs: 60_000, flushLastUsed: async () => {} });
}

test('a stale record answers when the tier fails, and only then', async () => {
  const t = tier();
  const auth = make(t);
  const k = key();
  t.records.set(k.hash.toString('hex'), k.rec);
  assert.deepEqual(await auth.authenticate(k.header), k.rec);
  await sleep(TTL + 10);
  t.state.down = true;
  assert.deepEqual(await auth.authenticate(k.header), k.rec, 'stale while the tier is down');
  // Once down, stale hits answer synchronously without waiting for the tier.
  assert.ok(!(auth.authenticate(k.header) instanceof Promise));
  assert.ok(auth.staleServed >= 2);
  assert.equal(await code(() => auth.authenticate(key().header)), 'auth_unavailable', 'a key never seen is refused');

  t.state.down = false;
  t.records.delete(k.hash.toString('hex'));
  await sleep(1_100); // past the probe interval: the next stale hit refreshes
  auth.authenticate(k.header);
  await sleep(10);
  assert.equal(await code(() => auth.authenticate(k.header)), 'unauthorized', 'the tier’s answer beats the stale copy');
  await auth.close();
});

test('an unknown key is never served as valid, fresh or stale', async () => {
  const t = tier();
  const auth = make(t);
  const k = key();
  assert.equal(await code(() => auth.authenticate(k.header)), 'unauthorized');
  await sleep(TTL + 10);
  t.state.down = true;
  assert.equal(await code(() => auth.authenticate(k.header)), 'auth_unavailable');
  await auth.close();
});

test('a revocation wins over the stale copy and over a lookup in flight', async () => {
  const t = tier();
  const auth = make(t);
  const k = key();
  t.records.set(k.hash.toString('hex'), k.rec);
  assert.deepEqual(await auth.authenticate(k.header), k.rec);
  await sleep(TTL + 10);
  // The refresh reads the record, then the revocation lands before the read returns.
  let open!: () => void;
  t.state.gate = new Promise((ok) => { open = ok; });
  const pending = code(() => auth.authenticate(k.header));
  await sleep(5);
  auth.invalidate(k.hash);
  open();
  assert.equal(await pending, 'unauthorized');
  t.state.gate = undefined;
  t.state.down = true;
  await sleep(TTL + 10);
  assert.equal(await code(() => auth.authenticate(k.header)), 'unauthorized', 'still refused during an outage');
  await auth.close();
});

test('a record another instance left in Redis answers a key never seen here, as stale', async () => {
  const t = tier();
  const auth = make(t);
  const k = key();
  t.state.down = true;
  t.state.stale = k.rec;
  assert.deepEqual(await auth.authenticate(k.header), k.rec);
  assert.ok(!(auth.authenticate(k.header) instanceof Promise), 'kept, and served at once while down');
  auth.invalidate(k.hash);
  assert.equal(await code(() => auth.authenticate(k.header)), 'unauthorized');
  await auth.close();
});

test('with stale_if_error_ms 0 a failing tier is a 503, as before', async () => {
  const t = tier();
  const auth = make(t, 0);
  const k = key();
  t.records.set(k.hash.toString('hex'), k.rec);
  await auth.authenticate(k.header);
  await sleep(TTL + 10);
  t.state.down = true;
  t.state.stale = k.rec;
  assert.equal(await code(() => auth.authenticate(k.header)), 'auth_unavailable');
  await auth.close();
});

// Long enough that a timer's lateness on a busy machine cannot carry a step
// past the half it means to land in.
const AHEAD_TTL = 600;

/** A key looked up once, then aged into the second half of its freshness. */
async function agedKey(t: ReturnType<typeof tier>, auth: Authenticator) {
  const k = key();
  t.records.set(k.hash.toString('hex'), k.rec);
  assert.deepEqual(await auth.authenticate(k.header), k.rec);
  await sleep(AHEAD_TTL / 2 + 50);
  return k;
}

test('a key in use is refreshed before it expires, and no request of it waits for the tier', async () => {
  const t = tier();
  const auth = make(t, 60_000, AHEAD_TTL);
  const k = await agedKey(t, auth);
  assert.equal(t.state.calls, 1);
  let open!: () => void;
  t.state.gate = new Promise((ok) => { open = ok; });
  const hit = auth.authenticate(k.header);
  assert.ok(!(hit instanceof Promise), 'answered from the cache while the refresh is out');
  assert.deepEqual(hit, k.rec);
  assert.equal(t.state.calls, 2, 'one refresh started');
  auth.authenticate(k.header);
  assert.equal(t.state.calls, 2, 'and only one while it is out');
  open();
  t.state.gate = undefined;
  await sleep(AHEAD_TTL / 2 + 50); // past the first lookup's expiry, inside the refreshed entry's freshness
  assert.ok(!(auth.authenticate(k.header) instanceof Promise), 'renewed: still answered at once');
  await auth.close();
});

test('a refresh ahead that finds the key gone refuses it from then on', async () => {
  const t = tier();
  const auth = make(t, 60_000, AHEAD_TTL);
  const k = await agedKey(t, auth);
  t.records.delete(k.hash.toString('hex'));
  assert.deepEqual(auth.authenticate(k.header), k.rec, 'the fresh entry answers while the refresh runs');
  await sleep(5);
  assert.equal(await code(() => auth.authenticate(k.header)), 'unauthorized');
  await auth.close();
});

test('a refresh ahead against a failing tier: the fresh entry answers, nothing counts as stale, and the tier is not asked per request', async () => {
  const t = tier();
  const auth = make(t, 60_000, AHEAD_TTL);
  const k = await agedKey(t, auth);
  t.state.down = true;
  assert.deepEqual(auth.authenticate(k.header), k.rec);
  await sleep(5);
  const calls = t.state.calls;
  for (let i = 0; i < 5; i++) assert.deepEqual(auth.authenticate(k.header), k.rec);
  assert.equal(t.state.calls, calls, 'no lookup per request while the chain is down');
  assert.equal(auth.staleServed, 0, 'a fresh entry is not a stale one');
  await auth.close();
});
