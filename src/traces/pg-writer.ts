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

/** traces.write_timeout_ms's default. */
export const DEFAULT_WRITE_TIMEOUT_MS = 30_000;

/** Ends a checked-out client's socket: its pending query rejects, which releases whoever awaits it. */
function destroySocket(client: pg.PoolClient): void {
  (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
}

/**
 * Writes the batch, or rejects within `timeoutMs` whatever Postgres does. The
 * clock covers every step, the partition check and the wait for a connection
 * too: a Postgres that accepts connections and never answers (a half-open TCP
 * path, a hung server) held the writer there for ever, with every later row
 * behind it in memory and shutdown waiting on it. Past the deadline a client
 * in hand has its socket ended, and one that arrives later is destroyed.
 */
export function writeBatch(
  pool: pg.Pool, partitions: PartitionKeeper, rows: readonly BufferedTrace[], idempotent: boolean, timeoutMs = DEFAULT_WRITE_TIMEOUT_MS,
): Promise<WriteResult> {
  if (rows.length === 0) return Promise.resolve({ inserted: 0 });
  let client: pg.PoolClient | undefined;
  let timedOut = false;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_ok, fail) => {
    timer = setTimeout(() => {
      timedOut = true;
      if (client) destroySocket(client);
      fail(new Error(`Postgres did not take the trace batch within ${timeoutMs} ms (traces.write_timeout_ms)`));
    }, timeoutMs);
  });

  async function write(): Promise<WriteResult> {
    const payloads = await encodePayloads(rows);
    const c = await checkOut(pool);
    if (timedOut) { checkIn(c, new Error('trace write timed out')); throw new Error('trace write timed out'); }
    client = c;
    try {
      // On this client, which the deadline can end: on a pooled one of its own, a query Postgres
      // never answered kept that client for ever, one more each batch.
      await partitions.ensureFor(c, rows.map((r) => r.created_at));
      const inserted = await writeInTransaction(c, rows, payloads, idempotent);
      checkIn(c);
      return { inserted };
    } catch (err) {
      // A failed connection must not return to the pool; a healthy one only needs its transaction rolled back.
      let broken: boolean = timedOut;
      // ROLLBACK outside a transaction is only a warning, so it doubles as a liveness check.
      if (!broken) await c.query('ROLLBACK').catch(() => { broken = true; });
      checkIn(c, broken ? (err as Error) : undefined);
      throw err;
    }
  }

  const written = write();
  // Past the deadline nobody awaits it: its own failure is expected then, not unhandled.
  written.catch(() => {});
  return Promise.race([written, late]).finally(() => clearTimeout(timer));
}

/** SQLSTATE 23505: the direct COPY met a request_id that is already stored. */
export function isDuplicateError(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '23505';
}
