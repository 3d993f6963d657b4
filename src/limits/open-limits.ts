// Builds the limiter for app.ts: Redis-backed when REDIS_URL is set (its own
// connection, failing fast like the key cache's), in process otherwise. In
// process means `local` when given (the main thread's store, shared by every
// gateway thread), else a LocalStore of this thread's own.
import type { Logger } from 'pino';
import type pg from 'pg';
import type { Config } from '../config/load-config.js';
import type { LimitSpec } from '../config/resilience-schema.js';
import { openRedis, whenReady } from '../store/redis-client.js';
import { repeatingWarning } from '../logger.js';
import { Limits } from './limits.js';
import { LocalStore } from './local-store.js';
import { RedisStore } from './redis-store.js';
import type { LimitStore } from './store.js';

export async function openLimits(config: Config, pool: pg.Pool, redisUrl: string | undefined, log: Logger, local?: LimitStore): Promise<{ limits: Limits; close(): Promise<void> }> {
  const orgSpecs = new Map<string, LimitSpec>();
  for (const o of config.organizations.values()) if (o.limits) orgSpecs.set(o.id, o.limits);
  const onError = repeatingWarning(log, 'limits: store or poll failed; deciding in process');
  const redis = redisUrl ? openRedis(redisUrl, log) : undefined;
  if (redis) await whenReady(redis, 1_000);
  const inProcess = local ?? new LocalStore();
  const store = redis ? new RedisStore(redis, onError, inProcess) : inProcess;
  const degraded = redis ? () => redis.status !== 'ready' : undefined;
  const marker = `${config.redis.key_prefix}spend:seeded`;
  const seeded = redis && {
    present: async () => (await redis.exists(marker)) === 1,
    set: async () => { await redis.set(marker, '1'); },
  };
  const limits = new Limits({ pool, store, prefix: config.redis.key_prefix, orgSpecs, pollMs: config.redis.rules_poll_ms, onError, degraded, seeded });
  try {
    await limits.start();
  } catch (err) {
    // Postgres down at start: limits apply from memory with zero spend until a poll succeeds.
    onError(err);
  }
  // A Redis that restarted lost its counters: put back what the traces say was spent.
  // Losing Redis is the mirror case: the in-process counters know only this
  // instance's spend, so they catch up with the traces at once (then at every poll).
  let up = redis?.status === 'ready';
  redis?.on('ready', () => { up = true; void limits.reseed(); });
  redis?.on('close', () => { if (up) { up = false; limits.catchUp(); } });
  return {
    limits,
    async close() {
      await limits.stop();
      if (redis) await redis.quit().catch(() => redis.disconnect());
    },
  };
}
