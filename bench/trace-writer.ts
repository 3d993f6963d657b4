// Trace pipeline bench. Targets (issue 4): record() <= 2 us on the request
// path; the writer sustains >= 100k traces/s into Postgres.
// Each section checks its result first, then reports its timing.
// Run: DATABASE_URL=postgres://... node dist/bench/trace-writer.js
import { check } from './check.js';
import pg from 'pg';
import { Bench } from 'tinybench';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, stopTestPostgres } from '../test/helpers/pg.js';
import { countRows, sampleTrace, traceSettings } from '../test/helpers/trace-fixtures.js';
import { migrate } from '../src/store/migrate.js';
import { TracePipeline } from '../src/traces/pipeline.js';
import { writeBatch } from '../src/traces/pg-writer.js';
import { PartitionKeeper } from '../src/traces/partitions.js';
import type { TraceRecord } from '../src/domain.js';
import { newRequestId } from '../src/pipeline/request-context.js';
import { randomUUID } from 'node:crypto';

const ROWS = Number(process.env.TRACE_BENCH_ROWS ?? 300_000);

/**
 * Request ids as the gateway makes them (time-ordered), or random ones, as it
 * made them until 2026-11-26: the primary key leads with the id, so which
 * kind it is decides where in the index each row lands.
 */
type Ids = 'gateway' | 'random';

function traces(org: string, n: number, ids: Ids = 'gateway'): TraceRecord[] {
  const id = ids === 'gateway' ? newRequestId : () => `req_${randomUUID().replaceAll('-', '')}`;
  return Array.from({ length: n }, (_, i) => sampleTrace({ organization_id: org, request_id: id(), latency_ms: i % 900 }));
}

async function enqueueCost(pool: pg.Pool, dataDir: string): Promise<void> {
  // Never started: record() only buffers, which is all the request path pays.
  const p = new TracePipeline({ pool, dataDir, settings: traceSettings({ buffer_capacity: 10_000_000, batch_size: 100_000 }) });
  const t = sampleTrace();
  p.record(t);
  check(p.metrics.bufferDepth === 1, 'record() buffers');
  const bench = new Bench({ time: 500 });
  bench.add('TracePipeline.record()', () => p.record(t));
  await bench.run();
  for (const task of bench.tasks) {
    // tinybench reports milliseconds.
    const r = task.result as { latency?: { mean: number; p99?: number } } | undefined;
    console.log(`enqueue: ${task.name} mean ${((r?.latency?.mean ?? NaN) * 1e6).toFixed(0)} ns, p99 ${((r?.latency?.p99 ?? NaN) * 1e6).toFixed(0)} ns`);
  }
}

/** One COPY at a time, no pipeline: the direct path against the replay path. */
async function rawCopy(pool: pg.Pool, org: string, batchSize: number, idempotent: boolean, ids: Ids = 'gateway'): Promise<void> {
  const rows = traces(org, ROWS, ids);
  const parts = new PartitionKeeper();
  const t0 = performance.now();
  for (let i = 0; i < rows.length; i += batchSize) await writeBatch(pool, parts, rows.slice(i, i + batchSize), idempotent);
  const ms = performance.now() - t0;
  const c = await countRows(pool, 'organization_id = $1', [org]);
  check(c.rows === ROWS && c.distinct === ROWS, `${org}: ${c.rows} rows`);
  console.log(`copy ${idempotent ? 'staging+ON CONFLICT' : 'direct             '} batch ${String(batchSize).padStart(5)}, ${ids.padEnd(7)} ids: ${Math.round(ROWS / (ms / 1000)).toLocaleString('en')} rows/s`);
}

async function endToEnd(pool: pg.Pool, dataDir: string, org: string, batchSize: number): Promise<void> {
  const rows = traces(org, ROWS);
  const p = new TracePipeline({ pool, dataDir, settings: traceSettings({ batch_size: batchSize, buffer_capacity: 1_000_000 }) });
  p.start();
  const t0 = performance.now();
  // Feed in slices, yielding between them, as request handlers would.
  for (let i = 0; i < rows.length; i += 5000) {
    for (let j = i; j < i + 5000 && j < rows.length; j++) p.record(rows[j] as TraceRecord);
    await new Promise((r) => setImmediate(r));
  }
  await p.close();
  const ms = performance.now() - t0;
  const c = await countRows(pool, 'organization_id = $1', [org]);
  check(c.rows === ROWS && c.distinct === ROWS, `${org}: ${c.rows} rows`);
  check(p.metrics.rowsSpooled === 0, 'nothing spilled');
  console.log(`pipeline record()->COPY batch ${String(batchSize).padStart(5)}: ${Math.round(ROWS / (ms / 1000)).toLocaleString('en')} traces/s (spooled ${p.metrics.rowsSpooled})`);
}

const db = await createTestDatabase();
const dataDir = mkdtempSync(join(tmpdir(), 'sluice-trace-bench-'));
try {
  const pool = new pg.Pool({ connectionString: db.url, max: 4 });
  // The schema as the gateway runs it: every migration, the usage rollups' trigger included.
  await migrate(pool);
  await enqueueCost(pool, dataDir);
  // Random ids first, into the empty table; the gateway's then go into a larger one, which if anything favours random.
  await rawCopy(pool, 'org_random', 1000, false, 'random');
  await rawCopy(pool, 'org_direct', 1000, false);
  await rawCopy(pool, 'org_staged', 1000, true);
  // Repeated: on a shared machine one run says little.
  for (let run = 1; run <= 3; run++) await endToEnd(pool, dataDir, `org_e2e_${run}`, 1000);
  await pool.end();
} finally {
  await db.drop();
  await stopTestPostgres();
  rmSync(dataDir, { recursive: true, force: true });
}
