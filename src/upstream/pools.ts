// One undici Pool per upstream origin, created on first use and kept alive, so
// that every call after the first reuses a warm connection.
import { Pool } from 'undici';

export interface PoolOptions {
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  /** Concurrent calls per origin; undefined for no cap. */
  connections: number | undefined;
  /** Caps on what one upstream answer may hold in memory. */
  limits: ExchangeLimits;
}

export interface ExchangeLimits {
  /** A JSON answer or an error body is held whole; past this it is cut off (502). */
  maxResponseBytes: number;
  /** One SSE event, or one unterminated line, in characters; a stream itself is consumed as it goes. */
  maxEventBytes: number;
}

export class UpstreamPools {
  private readonly pools = new Map<string, Pool>();

  readonly limits: ExchangeLimits;

  constructor(private readonly opts: PoolOptions) {
    this.limits = opts.limits;
  }

  get(origin: string): Pool {
    let pool = this.pools.get(origin);
    if (!pool) {
      pool = new Pool(origin, {
        connections: this.opts.connections ?? null,
        connect: { timeout: this.opts.connectTimeoutMs },
        headersTimeout: this.opts.headersTimeoutMs,
        bodyTimeout: this.opts.bodyTimeoutMs,
        keepAliveTimeout: 30_000,
        pipelining: 1,
      });
      this.pools.set(origin, pool);
    }
    return pool;
  }

  /** Calls waiting for a connection, and connections open, over every origin: for /metrics. */
  stats(): { queued: number; connected: number } {
    let queued = 0;
    let connected = 0;
    for (const p of this.pools.values()) {
      queued += p.stats.queued;
      connected += p.stats.connected;
    }
    return { queued, connected };
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((p) => p.close().catch(() => {})));
    this.pools.clear();
  }
}
