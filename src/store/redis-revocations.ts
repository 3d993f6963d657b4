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
/** A key whose record changed (its role): dropped from every cache, with no tombstone. */
export const changeChannel = (prefix: string): string => `${prefix}keys:changed`;

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

/**
 * A changed key's record leaves Redis and every instance's LRU, so its next
 * request reads Postgres. Resolves false when Redis could not be told: the
 * TTLs bound the change then.
 */
export async function publishChange(redis: Redis, prefix: string, hash: Buffer): Promise<boolean> {
  try {
    await Promise.all([redis.del(keyCacheKey(prefix, hash)), redis.publish(changeChannel(prefix), hash.toString('hex'))]);
    return true;
  } catch {
    return false;
  }
}

/** Calls `invalidate` with each revoked digest published by any instance, this one included, and `forget` with each changed one. */
export function subscribeRevocations(sub: Redis, prefix: string, invalidate: (hash: Buffer) => void, forget: (hash: Buffer) => void): void {
  const revoked = revocationChannel(prefix);
  const changed = changeChannel(prefix);
  sub.on('message', (ch: string, message: string) => {
    if (!/^[0-9a-f]{64}$/.test(message)) return;
    if (ch === revoked) invalidate(Buffer.from(message, 'hex'));
    else if (ch === changed) forget(Buffer.from(message, 'hex'));
  });
  // Subscribing on every `ready` covers a Redis that was down when sluice started.
  sub.on('ready', () => { sub.subscribe(revoked, changed).catch(() => {}); });
  if (sub.status === 'ready') sub.subscribe(revoked, changed).catch(() => {});
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
