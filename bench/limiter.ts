// The limits stage on the hot path (target: in process ≤ 2 µs a request):
// admit with no limits (a branch), admit against rpm + tpm + a budget for the
// organisation in process, the same from a gateway thread of several (the
// store on another thread, one message each way), and through Redis (one
// EVALSHA round trip; set REDIS_URL). Each case is checked for the right
// answer before it is timed.
//
//   npx tsc -p tsconfig.json && REDIS_URL=redis://127.0.0.1:6379 node dist/bench/limiter.js
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import { Redis } from 'ioredis';
import type pg from 'pg';
import { Bench } from 'tinybench';
import { GatewayError } from '../src/errors.js';
import { admit, settle, type Admission } from '../src/limits/gate.js';
import { Limits } from '../src/limits/limits.js';
import { LocalStore } from '../src/limits/local-store.js';
import { RedisStore } from '../src/limits/redis-store.js';
import type { LimitStore, StoreCall } from '../src/limits/store.js';
import { ThreadStore } from '../src/limits/thread-store.js';
import type { LimitSpec } from '../src/config/resilience-schema.js';

const HUGE = 1e12;
const spec = { rpm: HUGE, tpm: HUGE, budget_usd: { amount: HUGE, period: 'day' as const } };
const limitsOn = (store: LimitStore, prefix: string) => new Limits({
  // start() is never called here, so the pool is never used.
  pool: undefined as unknown as pg.Pool, store, prefix, pollMs: 60_000, onError: (e) => { throw e; },
  orgSpecs: new Map<string, LimitSpec>([['limited', spec], ['tight', { rpm: 2 }]]),
});

const local = limitsOn(new LocalStore(), 'bench:');
const who = { keyId: 'key_bench', org: 'limited' };

// Correctness first.
assert.equal(admit(local, { keyId: 'key_x', org: 'free' }, 10), undefined, 'no limits: nothing to do');
const a = admit(local, who, 10) as Admission;
assert.equal(a.meters.length, 2);
assert.equal(a.budgets.length, 1);
const tight = { keyId: 'key_t', org: 'tight' };
admit(local, tight, 1);
admit(local, tight, 1);
assert.throws(() => admit(local, tight, 1), (e) => e instanceof GatewayError && e.code === 'rate_limited');

const bench = new Bench({ time: 1_000 });
bench
  .add('admit, no limits configured', () => { admit(local, { keyId: 'key_x', org: 'free' }, 10); })
  .add('admit, rpm + tpm + budget, in process', () => { admit(local, who, 10); })
  .add('admit + settle, in process', () => { settle(local, admit(local, who, 10) as Admission, 12, 0.0001); });

// The process's store on another thread, as threaded-gateway.ts serves it to its gateway threads.
const host = new Worker(`
  const { parentPort } = require('node:worker_threads');
  Promise.all([import(${JSON.stringify(new URL('../src/limits/local-store.js', import.meta.url).href)}), import(${JSON.stringify(new URL('../src/limits/thread-store.js', import.meta.url).href)})])
    .then(([{ LocalStore }, { serveStoreCall }]) => {
      const store = new LocalStore();
      parentPort.on('message', (m) => {
        const value = serveStoreCall(store, m.call);
        if (m.id < 0) return;
        Promise.resolve(value).then((v) => parentPort.postMessage({ id: m.id, value: v }));
      });
      parentPort.postMessage('ready');
    });
`, { eval: true });
await new Promise((ok) => host.once('message', ok));
const answers = new Map<number, (v: unknown) => void>();
let nextId = 0;
host.on('message', (m: { id: number; value: unknown }) => { answers.get(m.id)?.(m.value); answers.delete(m.id); });
const threaded = limitsOn(new ThreadStore({
  ask: (call: StoreCall) => new Promise((ok) => { const id = nextId++; answers.set(id, ok); host.postMessage({ id, call }); }),
  tell: (call: StoreCall) => host.postMessage({ id: -1, call }),
}), 'bench:');
const t = await admit(threaded, who, 10);
assert.ok(t && t.tats.length === 2, 'the shared store admits');
await admit(threaded, tight, 1);
await admit(threaded, tight, 1);
await assert.rejects(async () => admit(threaded, tight, 1), (e) => e instanceof GatewayError && e.code === 'rate_limited');
bench.add('admit, one of several gateway threads (store on the main thread)', async () => { await admit(threaded, who, 10); });
bench.add('admit, one of several gateway threads, 32 concurrent, per request', async () => {
  await Promise.all(Array.from({ length: 32 }, () => admit(threaded, who, 10)));
});

let redis: Redis | undefined;
if (process.env.REDIS_URL) {
  redis = new Redis(process.env.REDIS_URL, { enableAutoPipelining: true });
  if (redis.status !== 'ready') await new Promise((ok) => redis!.once('ready', ok));
  const store = new RedisStore(redis, (e) => { throw e; });
  const remote = limitsOn(store, `bench-${process.pid}:`);
  const r = await admit(remote, who, 10);
  assert.ok(r && r.tats.length === 2, 'Redis admits');
  await admit(remote, tight, 1);
  await admit(remote, tight, 1);
  await assert.rejects(async () => admit(remote, tight, 1), (e) => e instanceof GatewayError && e.code === 'rate_limited');
  assert.equal(store.fallbacks, 0, 'Redis decided, not the in-process fallback');
  bench.add('admit through Redis (one EVALSHA round trip)', async () => { await admit(remote, who, 10); });
  bench.add('admit through Redis, 32 concurrent (auto-pipelined), per request', async () => {
    await Promise.all(Array.from({ length: 32 }, () => admit(remote, who, 10)));
  });
}

await bench.run();
console.table(bench.table());
for (const t of bench.tasks) {
  const mean = t.result?.latency?.mean ?? NaN;
  const per = t.name.includes('32 concurrent') ? mean / 32 : mean;
  console.log(`${t.name}: ${(per * 1000).toFixed(2)} µs per request`);
}
redis?.disconnect();
await host.terminate();
process.exit(0);
