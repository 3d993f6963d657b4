// Replays one sealed spool segment into Postgres, batch by batch, in the order
// written. Every batch goes through the idempotent path, so a segment replayed
// twice (a crash after some batches committed but before the file was
// deleted) still yields one row per request_id.
import type pg from 'pg';
import type { PartitionKeeper } from './partitions.js';
import { writeBatch } from './pg-writer.js';
import type { BadRecord, Spool } from './spool.js';

export interface ReplayProgress {
  /** Batches of this segment already committed by this process; a retry resumes after them. */
  done: number;
  badReported: boolean;
}

export interface ReplayHooks {
  /** traces.write_timeout_ms, per batch. */
  timeoutMs: number;
  onBatch(inserted: number, duplicates: number): void;
  /** Called once per unreadable record, the first time this process reads the segment. */
  onBad(bad: BadRecord): void;
}

/**
 * Throws on the first batch Postgres refuses, leaving `progress` at the batch
 * to resume from. Deletes the segment once every good batch is committed (keeps
 * it as `.bad` when more than a torn tail was unreadable).
 */
export async function replaySegment(
  spool: Spool, pool: pg.Pool, partitions: PartitionKeeper, path: string, progress: ReplayProgress,
  hooks: ReplayHooks,
): Promise<void> {
  const { batches, bad } = await spool.read(path);
  if (!progress.badReported) for (const b of bad) hooks.onBad(b);
  progress.badReported = true;
  for (; progress.done < batches.length; progress.done++) {
    const batch = batches[progress.done] as NonNullable<(typeof batches)[number]>;
    const res = await writeBatch(pool, partitions, batch, true, hooks.timeoutMs);
    hooks.onBatch(res.inserted, batch.length - res.inserted);
  }
  await spool.remove(path, bad.some((b) => !b.torn));
}
