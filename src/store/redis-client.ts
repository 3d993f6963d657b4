// The ioredis connections sluice uses. Redis is a cache here, never the system
// of record, so every command must fail fast while Redis is unreachable: no
// offline queue, no retries, a short command timeout. A request then falls back
// to Postgres within milliseconds instead of hanging. Reconnection goes on in
// the background with a capped backoff.
import { Redis } from 'ioredis';

export interface RedisLog {
  warn(obj: object, msg: string): void;
}

const COMMAND_TIMEOUT_MS = 250;

export function openRedis(url: string, log: RedisLog): Redis {
  const redis = new Redis(url, {
    enableAutoPipelining: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: COMMAND_TIMEOUT_MS,
    connectTimeout: 1_000,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
  });
  // ioredis emits an error per failed reconnect; one warning per outage is enough.
  let down = false;
  redis.on('error', (err: Error) => {
    if (!down) log.warn({ err: err.message }, 'redis unavailable; key lookups fall back to Postgres');
    down = true;
  });
  redis.on('ready', () => { down = false; });
  return redis;
}

/** The subscriber needs the offline queue: SUBSCRIBE is re-sent on every reconnect, not on the request path. */
export function openSubscriber(redis: Redis): Redis {
  const sub = redis.duplicate({ enableOfflineQueue: true, enableAutoPipelining: false, commandTimeout: undefined });
  sub.on('error', () => { /* the main connection already reports outages */ });
  return sub;
}

/** Waits for the first connection, but never longer than `ms`: sluice starts and serves without Redis. */
export function whenReady(redis: Redis, ms: number): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((ok) => {
    const done = () => { clearTimeout(t); redis.off('ready', done); ok(); };
    const t = setTimeout(done, ms);
    redis.once('ready', done);
  });
}
