// The Redis tier of key lookups, between the in-process LRU and Postgres.
// Values are msgpackr-encoded KeyRecords under `<prefix>key:<sha256 hex>`, plus
// `fresh_until` (epoch ms). Until then the record answers on its own; after it,
// Postgres is asked first, and the record is only the last known good answer,
// handed back (as a StaleKeyRecord rejection) when Postgres cannot be reached.
// It lives `ttlMs + staleMs` in Redis. Only valid keys are cached: an unknown
// key is cheap to re-check, and it must never become a stale-valid answer.
//
// A revoked key leaves a tombstone, `<prefix>revoked:<sha256 hex>`. A record is
// written only where no tombstone is, in one script, so a lookup that read
// Postgres just before a revocation cannot put the key back afterwards.
//
// While Redis is down every call goes straight to Postgres: a Redis failure can
// slow a cache miss by at most the command timeout, and never refuses a key.
import type { Redis } from 'ioredis';
import { pack, unpack } from 'msgpackr';
import { StaleKeyRecord, type KeyLookup } from '../auth/authenticator.js';
import { keyRecord, type KeyRecord } from './api-keys-repo.js';

export const keyCacheKey = (prefix: string, hash: Buffer): string => `${prefix}key:${hash.toString('hex')}`;
export const tombstoneKey = (prefix: string, hash: Buffer): string => `${prefix}revoked:${hash.toString('hex')}`;

/** Longer than the longest allowed auth.stale_if_error_ms, so a tombstone outlives every stale copy. */
export const TOMBSTONE_TTL_MS = 7 * 24 * 3600_000 + 60_000;

const SET_UNLESS_REVOKED = `if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`;

interface Stored extends KeyRecord { fresh_until?: number }

function isKeyRecord(v: unknown): v is Stored {
  const r = v as KeyRecord | null;
  return typeof r === 'object' && r !== null && typeof r.id === 'string' && typeof r.organization_id === 'string'
    && typeof r.name === 'string' && (r.role === 'admin' || r.role === 'user');
}

export interface RedisTierOptions {
  prefix: string;
  /** How long a cached record answers without asking Postgres. */
  ttlMs: number;
  /** How much longer it is kept as the last known good answer. */
  staleMs: number;
}

export function redisKeyLookup(redis: Redis, next: KeyLookup, opts: RedisTierOptions): KeyLookup {
  return {
    async lookup(hash) {
      const k = keyCacheKey(opts.prefix, hash);
      let stale: KeyRecord | undefined;
      if (redis.status === 'ready') {
        try {
          const buf = await redis.getBuffer(k);
          if (buf) {
            const v: unknown = unpack(buf);
            if (isKeyRecord(v)) {
              const rec = keyRecord(v);
              // A value without fresh_until was written by an older version, with a short PX: fresh.
              if (v.fresh_until === undefined || v.fresh_until > Date.now()) return rec;
              stale = rec;
            }
          }
        } catch { /* Redis failed mid-command: Postgres answers instead */ }
      }
      let rec: KeyRecord | null;
      try {
        rec = await next.lookup(hash);
      } catch (err) {
        throw stale && opts.staleMs > 0 ? new StaleKeyRecord(stale, { cause: err }) : err;
      }
      if (redis.status === 'ready') {
        if (rec) {
          const value = pack({ ...rec, fresh_until: Date.now() + opts.ttlMs } satisfies Stored);
          redis.eval(SET_UNLESS_REVOKED, 2, k, tombstoneKey(opts.prefix, hash), value, opts.ttlMs + opts.staleMs).catch(() => {});
        } else if (stale) {
          // Revoked while nobody was listening: the stale copy must not answer in a later outage.
          redis.del(k).catch(() => {});
        }
      }
      return rec;
    },
  };
}
