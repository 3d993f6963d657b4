// Revocation across instances. The revoker writes a tombstone, deletes the
// cached record from Redis and publishes the key digest on
// `<prefix>keys:revoked`; every instance subscribes and drops the digest from
// its in-process LRU. A missed message (Redis down, a reconnect) is covered by
// the cache TTLs while Postgres answers, and by the revocation poller
// (revocation-poller.ts) before a stale copy could be served in an outage.
import type { Redis } from 'ioredis';
import { openRedis, whenReady, type RedisLog } from './redis-client.js';
import { keyCacheKey, TOMBSTONE_TTL_MS, tombstoneKey } from './redis-key-cache.js';

export const revocationChannel = (prefix: string): string => `${prefix}keys:revoked`;

/** The tombstone first, so that no racing lookup can write the record back after the delete. */
export async function tombstoneInRedis(redis: Redis, prefix: string, hash: Buffer): Promise<boolean> {
  try {
    await Promise.all([redis.set(tombstoneKey(prefix, hash), '1', 'PX', TOMBSTONE_TTL_MS), redis.del(keyCacheKey(prefix, hash))]);
    return true;
  } catch {
    return false;
  }
}

/** Resolves false when Redis could not be told; the TTL still bounds the revocation then. */
export async function publishRevocation(redis: Redis, prefix: string, hash: Buffer): Promise<boolean> {
  try {
    const [stored] = await Promise.all([tombstoneInRedis(redis, prefix, hash), redis.publish(revocationChannel(prefix), hash.toString('hex'))]);
    return stored;
  } catch {
    return false;
  }
}

/** Calls `invalidate` with each digest published by any instance, this one included. */
export function subscribeRevocations(sub: Redis, prefix: string, invalidate: (hash: Buffer) => void): void {
  const channel = revocationChannel(prefix);
  sub.on('message', (ch: string, message: string) => {
    if (ch === channel && /^[0-9a-f]{64}$/.test(message)) invalidate(Buffer.from(message, 'hex'));
  });
  // Subscribing on every `ready` covers a Redis that was down when sluice started.
  sub.on('ready', () => { sub.subscribe(channel).catch(() => {}); });
  if (sub.status === 'ready') sub.subscribe(channel).catch(() => {});
}

/** For one-shot processes (the `sluice keys revoke` CLI): connect, publish, disconnect. */
export async function announceRevocation(url: string, prefix: string, hash: Buffer, log: RedisLog): Promise<boolean> {
  const redis = openRedis(url, log);
  try {
    await whenReady(redis, 2_000);
    return await publishRevocation(redis, prefix, hash);
  } finally {
    redis.disconnect();
  }
}
