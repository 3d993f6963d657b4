// The key-lookup chain behind the Authenticator's LRU, and revocation across
// instances. With REDIS_URL: LRU -> Redis -> Postgres, and revocations go out on
// pub/sub. Without it: LRU -> Postgres, and a revocation made through this
// instance is applied to its own LRU at once. Either way a revocation poller
// reads revocations back from Postgres, for those no message announced.
//
// A revoked key must never be accepted longer than auth.cache_ttl_ms while
// Postgres answers, even if every pub/sub message is lost. A record can sit in
// Redis and then in an LRU that copied it just before it went stale, so with
// Redis the budget is split: half for the Redis entry, half for the LRU entry.
// Past its freshness a record is kept auth.stale_if_error_ms longer, and used
// only when Postgres cannot be reached (see authenticator.ts).
import type { Redis } from 'ioredis';
import type pg from 'pg';
import type { Authenticator, KeyLookup } from '../auth/authenticator.js';
import { postgresKeyLookup } from './key-lookup.js';
import { openRedis, openSubscriber, whenReady, type RedisLog } from './redis-client.js';
import { redisKeyLookup } from './redis-key-cache.js';
import { publishChange, publishRevocation, subscribeRevocations, tombstoneInRedis } from './redis-revocations.js';
import { RevocationPoller } from './revocation-poller.js';
import { repeatingWarning } from '../logger.js';

export interface KeyCache {
  readonly lookup: KeyLookup;
  /** The TTL the Authenticator's LRU must use. */
  readonly lruTtlMs: number;
  /** Starts applying revocations published by any instance, or found in Postgres, to `auth`. */
  attach(auth: Authenticator): void;
  /** Applies a revocation here at once and tells every other instance. */
  revoked(hash: Buffer): Promise<void>;
  /** Drops a key whose record changed (its role) here at once and from every other instance, with no tombstone. */
  changed(hash: Buffer): Promise<void>;
  close(): Promise<void>;
}

export interface KeyCacheOptions {
  pool: pg.Pool;
  redisUrl: string | undefined;
  ttlMs: number;
  /** auth.stale_if_error_ms: how long a record is kept past its freshness, for outages. */
  staleMs?: number;
  prefix: string;
  log: RedisLog;
}

/** Often enough that a revocation no message announced is known well before its stale copy could matter. */
const pollEvery = (ttlMs: number) => Math.max(500, ttlMs);

export async function openKeyCache(o: KeyCacheOptions): Promise<KeyCache> {
  const pgTier = postgresKeyLookup(o.pool);
  const staleMs = o.staleMs ?? 0;
  let auth: Authenticator | undefined;
  let redis: Redis | undefined;
  // Digests a poll found revoked whose Redis tombstone could not be written yet (Redis down): retried each poll.
  const pendingTombstones = new Map<string, Buffer>();
  const pollFailed = repeatingWarning(o.log, 'revocation poll failed; known keys are served from cache until Postgres answers');
  const poller = new RevocationPoller(o.pool, {
    intervalMs: pollEvery(o.ttlMs),
    onRevoked(hash) {
      auth?.invalidate(hash);
      if (redis) pendingTombstones.set(hash.toString('hex'), hash);
    },
    onPolled() {
      for (const [hex, h] of pendingTombstones) {
        void tombstoneInRedis(redis!, o.prefix, h).then((ok) => { if (ok) pendingTombstones.delete(hex); });
      }
    },
    onHealth: (ok, err) => {
      if (!ok) pollFailed((err as Error | undefined)?.message);
    },
  });
  if (!o.redisUrl) {
    return {
      lookup: pgTier,
      lruTtlMs: o.ttlMs,
      attach(a) { auth = a; poller.start(); },
      async revoked(hash) { auth?.invalidate(hash); },
      async changed(hash) { auth?.forget(hash); },
      async close() { await poller.stop(); },
    };
  }
  redis = openRedis(o.redisUrl, o.log);
  const r = redis;
  const sub = openSubscriber(r);
  await Promise.all([whenReady(r, 1_000), whenReady(sub, 1_000)]);
  const redisTtl = Math.max(1, Math.floor(o.ttlMs / 2));
  return {
    lookup: redisKeyLookup(r, pgTier, { prefix: o.prefix, ttlMs: redisTtl, staleMs }),
    lruTtlMs: Math.max(1, o.ttlMs - redisTtl),
    attach(a) {
      auth = a;
      subscribeRevocations(sub, o.prefix, (hash) => a.invalidate(hash), (hash) => a.forget(hash));
      poller.start();
    },
    async revoked(hash) {
      auth?.invalidate(hash);
      if (!(await publishRevocation(r, o.prefix, hash))) {
        o.log.warn({}, 'revocation not published (redis unavailable); other instances drop the key within auth.cache_ttl_ms');
      }
    },
    async changed(hash) {
      auth?.forget(hash);
      if (!(await publishChange(r, o.prefix, hash))) {
        o.log.warn({}, 'key change not published (redis unavailable); other instances read the key afresh within auth.cache_ttl_ms');
      }
    },
    async close() {
      await poller.stop();
      sub.disconnect();
      await r.quit().catch(() => r.disconnect());
    },
  };
}
