// Keeps the daily partitions of `traces` and `trace_payloads` ahead of the
// writer and behind the retention window. A COPY into a day with no partition
// fails outright, so the writer asks for every day in a batch before writing;
// the set of known days makes that a lookup in the common case.
import type pg from 'pg';

const DAY_MS = 86_400_000;

function isoDay(day: number): string {
  return new Date(day * DAY_MS).toISOString().slice(0, 10);
}

export class PartitionKeeper {
  private readonly known = new Set<number>();

  /** Ensures a partition exists for the UTC day of every given timestamp (epoch ms), on the pool or a client in hand. */
  async ensureFor(db: pg.Pool | pg.PoolClient, timestamps: Iterable<number>): Promise<void> {
    let missing: Set<number> | undefined;
    for (const ms of timestamps) {
      const day = Math.floor((Number.isFinite(ms) ? ms : 0) / DAY_MS);
      if (!this.known.has(day)) (missing ??= new Set()).add(day);
    }
    if (!missing) return;
    for (const day of missing) {
      await db.query('SELECT sluice_traces_ensure_day($1::date)', [isoDay(day)]);
      this.known.add(day);
    }
  }

  /**
   * Creates the partitions from yesterday to two days ahead, so that the hot
   * path never waits on DDL at midnight, then drops the days past retention.
   * Returns the number of partitions dropped.
   */
  async maintain(pool: pg.Pool, retentionDays: number, now = Date.now()): Promise<number> {
    const today = Math.floor(now / DAY_MS);
    await this.ensureFor(pool, [-1, 0, 1, 2].map((d) => (today + d) * DAY_MS));
    const res = await pool.query<{ dropped: number }>('SELECT sluice_traces_drop_before($1::date) AS dropped', [isoDay(today - retentionDays)]);
    const dropped = res.rows[0]?.dropped ?? 0;
    // A dropped day may be written again by a late replay; forget it so it is recreated.
    if (dropped > 0) for (const day of this.known) if (day < today - retentionDays) this.known.delete(day);
    return dropped;
  }
}
