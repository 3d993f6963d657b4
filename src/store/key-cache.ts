// The key-lookup chain behind the Authenticator's LRU, and revocation across
// instances. With REDIS_URL: LRU -> Redis -> Postgres, and revocations go out on
// pub/sub. Without it: LRU -> Postgres, and a revocation made through this
// instance is applied to its own LRU at once.
//
// A revoked key must never be accepted longer than auth.cache_ttl_ms, even if
// every pub/sub message is lost. A record can sit in Redis and then in an LRU
// that copied it just before it expired, so with Redis the budget is split:
// half for the Redis entry, half for the LRU entry.
import type { Redis } from 'ioredis';
import type pg from 'pg';
import type { Authenticator, KeyLookup } from '../auth/authenticator.js';
import { postgresKeyLookup } from './key-lookup.js';
import { openRedis, openSubscriber, whenReady, type RedisLog } from './redis-client.js';
import { redisKeyLookup } from './redis-key-cache.js';
import { publishRevocation, subscribeRevocations } from './redis-revocations.js';

export interface KeyCache {
  readonly lookup: KeyLookup;
  /** The TTL the Authenticator's LRU must use. */
  readonly lruTtlMs: number;
  /** Starts applying revocations published by any instance to `auth`. */
  attach(auth: Authenticator): void;
  /** Applies a revocation here at once and tells every other instance. */
  revoked(hash: Buffer): Promise<void>;
  close(): Promise<void>;
}

export interface KeyCacheOptions {
  pool: pg.Pool;
  redisUrl: string | undefined;
  ttlMs: number;
  prefix: string;
  log: RedisLog;
}

export async function openKeyCache(o: KeyCacheOptions): Promise<KeyCache> {
  const pgTier = postgresKeyLookup(o.pool);
  let auth: Authenticator | undefined;
  if (!o.redisUrl) {
    return {
      lookup: pgTier,
      lruTtlMs: o.ttlMs,
      attach(a) { auth = a; },
      async revoked(hash) { auth?.invalidate(hash); },
      async close() {},
    };
  }
  const redis: Redis = openRedis(o.redisUrl, o.log);
  const sub = openSubscriber(redis);
  await Promise.all([whenReady(redis, 1_000), whenReady(sub, 1_000)]);
  const redisTtl = Math.max(1, Math.floor(o.ttlMs / 2));
  return {
    lookup: redisKeyLookup(redis, pgTier, { prefix: o.prefix, ttlMs: redisTtl }),
    lruTtlMs: Math.max(1, o.ttlMs - redisTtl),
    attach(a) {
      auth = a;
      subscribeRevocations(sub, o.prefix, (hash) => a.invalidate(hash));
    },
    async revoked(hash) {
      auth?.invalidate(hash);
      if (!(await publishRevocation(redis, o.prefix, hash))) {
        o.log.warn({}, 'revocation not published (redis unavailable); other instances drop the key within auth.cache_ttl_ms');
      }
    },
    async close() {
      sub.disconnect();
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
