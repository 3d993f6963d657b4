// Postgres that accepts connections and never answers (a hung server, a
// half-open path): unlike a stopped one, nothing fails, it only waits. The
// writer held its batch there for ever, with every later row behind it in
// memory, nothing spooled and shutdown waiting on it; a kill then lost them all.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyTraceMigration, countRows, sampleTrace, traceSettings, waitFor } from './helpers/trace-fixtures.js';
import { createTestDatabase, stopTestPostgres, type TestDatabase } from './helpers/pg.js';
import { startStallProxy, type StallProxy } from './helpers/stall-proxy.js';
import { TracePipeline } from '../src/traces/pipeline.js';

let db: TestDatabase;
let proxy: StallProxy;
let proxied: string;
const dirs: string[] = [];

before(async () => {
  db = await createTestDatabase();
  await applyTraceMigration(db.url);
  const u = new URL(db.url);
  proxy = await startStallProxy(u.hostname, Number(u.port || 5432));
  u.port = String(proxy.port);
  proxied = u.toString();
});

after(async () => {
  await proxy.close();
  await db.drop();
  await stopTestPostgres();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test('a stalled Postgres: batches are spooled within write_timeout_ms, shutdown ends, and the next start writes each row once', { timeout: 60_000 }, async (t) => {
  // No connect timeout on this pool: the writer's own deadline must bound every step.
  const pool = new pg.Pool({ connectionString: proxied, max: 4 });
  pool.on('error', () => {});
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-stall-'));
  dirs.push(dataDir);
  const settings = traceSettings({ batch_size: 10, batch_age_ms: 20, write_timeout_ms: 500 });
  const p = new TracePipeline({ pool, settings, dataDir });
  t.after(() => p.close().catch(() => {}));
  p.start();
  const ids: string[] = [];
  const record = (n: number) => { for (let i = 0; i < n; i++) { const tr = sampleTrace({ organization_id: 'org_stall' }); ids.push(tr.request_id); p.record(tr); } };

  record(10);
  await waitFor(() => p.metrics.rowsWritten >= 10, 10_000, 'rows written before the stall');
  proxy.stall();
  record(50);
  await waitFor(() => p.metrics.rowsSpooled >= 50, 15_000, 'the rows behind the stalled write spooled');
  const closing = Date.now();
  await p.close();
  assert.ok(Date.now() - closing < 10_000, `close() took ${Date.now() - closing} ms`);

  proxy.pass();
  const healthy = new pg.Pool({ connectionString: db.url, max: 2 });
  const next = new TracePipeline({ pool: healthy, settings, dataDir });
  next.start();
  await waitFor(async () => (await countRows(healthy, 'organization_id = $1', ['org_stall'])).rows >= ids.length, 15_000, 'the spool replayed');
  await next.close();
  const counted = await countRows(healthy, 'organization_id = $1', ['org_stall']);
  assert.deepEqual(counted, { rows: ids.length, distinct: ids.length });
  await healthy.end();
  await Promise.race([pool.end(), new Promise((r) => setTimeout(r, 1000))]);
});

test('a spool that refuses writes: a batch that overflowed the buffer goes to Postgres, which answers (it waited for the disk alone)', { timeout: 60_000 }, async (t) => {
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-spool-refuses-'));
  dirs.push(dataDir);
  // A full or read-only disk, as the spool meets it: every append fails.
  const p = new TracePipeline({ pool, settings: traceSettings({ buffer_capacity: 20, batch_size: 1000, batch_age_ms: 50 }), dataDir });
  (p as unknown as { spool: { append(): Promise<never> } }).spool.append = () => Promise.reject(Object.assign(new Error('read-only file system'), { code: 'EROFS' }));
  t.after(async () => { await p.close().catch(() => {}); await pool.end(); });
  p.start();
  // Recorded in one turn: the buffer overflows, and its rows are handed to the spool.
  for (let i = 0; i < 100; i++) p.record(sampleTrace({ organization_id: 'org_spool_refuses' }));
  await waitFor(async () => (await countRows(pool, 'organization_id = $1', ['org_spool_refuses'])).rows >= 100, 15_000, 'every row in Postgres');
  assert.ok(p.metrics.spoolErrors > 0, 'the spool was tried first');
  assert.deepEqual(await countRows(pool, 'organization_id = $1', ['org_spool_refuses']), { rows: 100, distinct: 100 });
});
