// Revocation across instances. The revoker deletes the cached record from Redis
// and publishes the key digest on `<prefix>keys:revoked`; every instance
// subscribes and drops the digest from its in-process LRU. A missed message
// (Redis down, a reconnect) is covered by the cache TTLs, which bound how long a
// revoked key can still be accepted.
import type { Redis } from 'ioredis';
import { openRedis, whenReady, type RedisLog } from './redis-client.js';
import { keyCacheKey } from './redis-key-cache.js';

export const revocationChannel = (prefix: string): string => `${prefix}keys:revoked`;

/** Resolves false when Redis could not be told; the TTL still bounds the revocation then. */
export async function publishRevocation(redis: Redis, prefix: string, hash: Buffer): Promise<boolean> {
  try {
    await Promise.all([redis.del(keyCacheKey(prefix, hash)), redis.publish(revocationChannel(prefix), hash.toString('hex'))]);
    return true;
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
