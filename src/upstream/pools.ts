// The upstream connections of every origin, each origin's made on first use
// and kept alive, so that every call after the first reuses a warm connection.
import { OriginClients, type OriginOptions } from './origin-clients.js';

export interface PoolOptions extends OriginOptions {
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
  private readonly pools = new Map<string, OriginClients>();

  readonly limits: ExchangeLimits;

  constructor(private readonly opts: PoolOptions) {
    this.limits = opts.limits;
  }

  get(origin: string): OriginClients {
    let pool = this.pools.get(origin);
    if (!pool) {
      pool = new OriginClients(origin, this.opts);
      this.pools.set(origin, pool);
    }
    return pool;
  }

  /** Calls waiting for a connection, and connections open, over every origin: for /metrics. */
  stats(): { queued: number; connected: number } {
    let queued = 0;
    let connected = 0;
    for (const p of this.pools.values()) {
      queued += p.queued;
      connected += p.connected;
    }
    return { queued, connected };
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((p) => p.close()));
    this.pools.clear();
  }
}
