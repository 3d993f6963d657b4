// The limits stage on the hot path (target: in process ≤ 2 µs a request):
// admit with no limits (a branch), admit against rpm + tpm + a budget for the
// organisation in process, and the same through Redis (one EVALSHA round trip;
// set REDIS_URL). Each case is checked for the right answer before it is timed.
//
//   npx tsc -p tsconfig.json && REDIS_URL=redis://127.0.0.1:6379 node dist/bench/limiter.js
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import type pg from 'pg';
import { Bench } from 'tinybench';
import { GatewayError } from '../src/errors.js';
import { admit, settle, type Admission } from '../src/limits/gate.js';
import { Limits } from '../src/limits/limits.js';
import { LocalStore } from '../src/limits/local-store.js';
import { RedisStore } from '../src/limits/redis-store.js';
import type { LimitStore } from '../src/limits/store.js';
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
process.exit(0);
