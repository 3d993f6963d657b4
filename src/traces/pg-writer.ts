// Writes one batch of traces (and their payloads) in one transaction with
// COPY. Two modes:
//  - direct: COPY straight into the partitioned tables. Fastest; fails as a
//    whole on a duplicate request_id.
//  - idempotent: COPY into a session temp table, then INSERT ... ON CONFLICT
//    DO NOTHING. Used for spool replay and to retry a batch that hit a
//    duplicate, so that a batch written twice yields one row per request.
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { once } from 'node:events';
import { PAYLOAD_COLUMNS, TRACE_COLUMNS, encodePayloadRows, encodeTraceRows, hasPayload, type BufferedTrace } from './copy-encoder.js';
import { compressPayload } from './payload-archive.js';
import type { PartitionKeeper } from './partitions.js';
import { checkIn, checkOut } from '../store/checked-out.js';

const TRACE_COLS = TRACE_COLUMNS.join(', ');
const PAYLOAD_COLS = PAYLOAD_COLUMNS.join(', ');

/** A COPY that never completes (half-open TCP) would stall the writer forever; past this, the connection is destroyed. */
const WRITE_TIMEOUT_MS = 30_000;

export interface WriteResult {
  /** Rows newly inserted into `traces` (fewer than the batch when replay skipped duplicates). */
  inserted: number;
}

/**
 * The batch is one buffer, so the COPY stream is simply ended with it.
 * `pipeline(Readable.from(...))` did the same at three times the CPU: its
 * AbortController, end-of-stream listeners and the DOMException it builds on
 * every finish cost about 0.4 ms a batch, more than the COPY itself. 'finish'
 * fires only once Postgres has acknowledged the COPY; 'error' rejects `once`.
 */
async function copyInto(client: pg.PoolClient, sql: string, data: string): Promise<void> {
  if (data.length === 0) return;
  const copy = client.query(copyFrom(sql));
  copy.end(Buffer.from(data, 'utf8'));
  await once(copy, 'finish');
}

async function writeInTransaction(client: pg.PoolClient, rows: readonly BufferedTrace[], payloads: string, idempotent: boolean): Promise<number> {
  // A lone COPY is atomic by itself: skipping BEGIN/COMMIT saves two round trips on the common path.
  if (!idempotent && !payloads) {
    await copyInto(client, `COPY traces (${TRACE_COLS}) FROM STDIN`, encodeTraceRows(rows));
    return rows.length;
  }
  await client.query('BEGIN');
  let inserted = rows.length;
  if (idempotent) {
    await client.query(`CREATE TEMP TABLE IF NOT EXISTS traces_staging (LIKE traces) ON COMMIT DELETE ROWS;
      CREATE TEMP TABLE IF NOT EXISTS trace_payloads_staging (LIKE trace_payloads) ON COMMIT DELETE ROWS`);
    await copyInto(client, `COPY traces_staging (${TRACE_COLS}) FROM STDIN`, encodeTraceRows(rows));
    const res = await client.query(`INSERT INTO traces (${TRACE_COLS}) SELECT ${TRACE_COLS} FROM traces_staging ON CONFLICT DO NOTHING`);
    inserted = res.rowCount ?? 0;
    if (payloads) {
      await copyInto(client, `COPY trace_payloads_staging (${PAYLOAD_COLS}) FROM STDIN`, payloads);
      await client.query(`INSERT INTO trace_payloads (${PAYLOAD_COLS}) SELECT ${PAYLOAD_COLS} FROM trace_payloads_staging ON CONFLICT DO NOTHING`);
    }
  } else {
    await copyInto(client, `COPY traces (${TRACE_COLS}) FROM STDIN`, encodeTraceRows(rows));
    await copyInto(client, `COPY trace_payloads (${PAYLOAD_COLS}) FROM STDIN`, payloads);
  }
  await client.query('COMMIT');
  return inserted;
}

async function encodePayloads(rows: readonly BufferedTrace[]): Promise<string> {
  const withPayload = rows.filter(hasPayload);
  if (withPayload.length === 0) return '';
  const bodies = await Promise.all(withPayload.map((t) => compressPayload(t.payload)));
  return encodePayloadRows(withPayload.map((trace, i) => ({ trace, body: bodies[i] as Buffer })));
}

export async function writeBatch(
  pool: pg.Pool, partitions: PartitionKeeper, rows: readonly BufferedTrace[], idempotent: boolean,
): Promise<WriteResult> {
  if (rows.length === 0) return { inserted: 0 };
  const payloads = await encodePayloads(rows);
  await partitions.ensureFor(pool, rows.map((r) => r.created_at));
  const client = await checkOut(pool);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    // Ending the socket makes the pending COPY reject, which releases the writer.
    (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
  }, WRITE_TIMEOUT_MS);
  try {
    const inserted = await writeInTransaction(client, rows, payloads, idempotent);
    checkIn(client);
    return { inserted };
  } catch (err) {
    // A failed connection must not return to the pool; a healthy one only needs its transaction rolled back.
    let broken = timedOut;
    // ROLLBACK outside a transaction is only a warning, so it doubles as a liveness check.
    if (!broken) await client.query('ROLLBACK').catch(() => { broken = true; });
    checkIn(client, broken ? (err as Error) : undefined);
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/** SQLSTATE 23505: the direct COPY met a request_id that is already stored. */
export function isDuplicateError(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '23505';
}
