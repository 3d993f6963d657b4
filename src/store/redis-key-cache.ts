// The Redis tier of key lookups, between the in-process LRU and Postgres.
// Values are msgpackr-encoded KeyRecords under `<prefix>key:<sha256 hex>` with a
// short TTL. Only valid keys are cached: an unknown key is cheap to re-check and
// caching "unknown" would add nothing the LRU does not already do.
//
// While Redis is down every call goes straight to Postgres: a Redis failure can
// slow a cache miss by at most the command timeout, and never refuses a key.
import type { Redis } from 'ioredis';
import { pack, unpack } from 'msgpackr';
import type { KeyLookup } from '../auth/authenticator.js';
import type { KeyRecord } from './api-keys-repo.js';

export const keyCacheKey = (prefix: string, hash: Buffer): string => `${prefix}key:${hash.toString('hex')}`;

function isKeyRecord(v: unknown): v is KeyRecord {
  const r = v as KeyRecord | null;
  return typeof r === 'object' && r !== null && typeof r.id === 'string' && typeof r.organization_id === 'string'
    && typeof r.name === 'string' && (r.role === 'admin' || r.role === 'user');
}

export function redisKeyLookup(redis: Redis, next: KeyLookup, opts: { prefix: string; ttlMs: number }): KeyLookup {
  return {
    async lookup(hash) {
      const k = keyCacheKey(opts.prefix, hash);
      if (redis.status === 'ready') {
        try {
          const buf = await redis.getBuffer(k);
          if (buf) {
            const rec: unknown = unpack(buf);
            if (isKeyRecord(rec)) return { id: rec.id, organization_id: rec.organization_id, name: rec.name, role: rec.role };
          }
        } catch { /* Redis failed mid-command: Postgres answers instead */ }
      }
      const rec = await next.lookup(hash);
      if (rec && redis.status === 'ready') redis.set(k, pack(rec), 'PX', opts.ttlMs).catch(() => {});
      return rec;
    },
  };
}
