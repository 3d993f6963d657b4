// Learns revocations from the system of record itself. Pub/sub is the fast
// path, but a message can be lost (Redis down, no Redis at all and a CLI
// revocation), and while Postgres answers the freshness TTL covers that. A
// stale copy served during a later Postgres outage would not be covered: so
// every instance also polls for keys revoked since its last poll and drops them
// (tombstones them) before an outage can make their stale copies useful.
//
// revoked_at is the revoking transaction's start time, which can commit after a
// later one: each poll looks back OVERLAP_MS past the previous poll, and digests
// already applied are remembered over that window so each is applied once.
import type pg from 'pg';

const OVERLAP_MS = 60_000;

export interface RevocationPollerOptions {
  intervalMs: number;
  onRevoked(hash: Buffer): void;
  /** After each successful poll. */
  onPolled?(): void;
  /** Called on the first failure after a success, and on the first success after failures. */
  onHealth?(ok: boolean, err?: unknown): void;
}

export class RevocationPoller {
  private since: Date | null = null;
  private readonly applied = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private failing = false;

  constructor(private readonly pool: pg.Pool, private readonly opts: RevocationPollerOptions) {}

  start(): void {
    this.timer = setInterval(() => { void this.poll(); }, this.opts.intervalMs);
    this.timer.unref();
    void this.poll();
  }

  /** One poll (coalesced with a running one). Never rejects. */
  poll(): Promise<void> {
    this.running ??= this.once().then(
      () => { if (this.failing) { this.failing = false; this.opts.onHealth?.(true); } },
      (err: unknown) => { if (!this.failing) { this.failing = true; this.opts.onHealth?.(false, err); } },
    ).finally(() => { this.running = undefined; });
    return this.running;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  private async once(): Promise<void> {
    const { rows } = await this.pool.query<{ now: Date; hashes: Buffer[] }>(
      `SELECT now() AS now, array(SELECT key_hash FROM api_keys
         WHERE revoked_at > coalesce($1::timestamptz, now()) - make_interval(secs => $2)) AS hashes`,
      [this.since, OVERLAP_MS / 1000],
    );
    const { now, hashes } = rows[0]!;
    const at = now.getTime();
    for (const h of hashes) {
      const hex = h.toString('hex');
      if (this.applied.has(hex)) continue;
      this.applied.set(hex, at);
      this.opts.onRevoked(h);
    }
    for (const [hex, t] of this.applied) if (t < at - 2 * OVERLAP_MS) this.applied.delete(hex);
    this.since = now;
    this.opts.onPolled?.();
  }
}
