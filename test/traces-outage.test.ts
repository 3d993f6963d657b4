// Postgres stopped for ~20 s under a steady stream of traces, then started
// again: every trace recorded in the meantime has exactly one row afterwards.
// Runs on a dedicated embedded Postgres, since the shared server must stay up.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRestartablePostgres, type RestartablePostgres } from './helpers/restartable-postgres.js';
import { applyTraceMigration, countRows, sampleTrace, traceSettings, waitFor } from './helpers/trace-fixtures.js';
import { TracePipeline } from '../src/traces/pipeline.js';

const OUTAGE_MS = 20_000;
const RATE_PER_TICK = 20;
const TICK_MS = 10;

let server: RestartablePostgres;
let dataDir: string;

before(async () => {
  server = await startRestartablePostgres();
  await applyTraceMigration(server.url);
  dataDir = mkdtempSync(join(tmpdir(), 'sluice-outage-'));
});

after(async () => {
  await server.destroy();
  rmSync(dataDir, { recursive: true, force: true });
});

test('a 20 s Postgres outage under load loses nothing and duplicates nothing', { timeout: 120_000 }, async (t) => {
  const pool = new pg.Pool({ connectionString: server.url, max: 4, connectionTimeoutMillis: 1000 });
  // Idle clients error when the server goes away; the writer sees the failure on its next query.
  pool.on('error', () => {});
  const warnings: object[] = [];
  const p = new TracePipeline({
    pool, dataDir, settings: traceSettings({ batch_size: 500, batch_age_ms: 50 }),
    logger: { info: () => {}, warn: (o) => { warnings.push(o); }, error: () => {} },
  });
  p.start();

  let recorded = 0;
  let maxRecordNs = 0n;
  const producer = setInterval(() => {
    for (let i = 0; i < RATE_PER_TICK; i++) {
      const t0 = process.hrtime.bigint();
      p.record(sampleTrace({ organization_id: 'org_outage', request_id: `req_outage_${recorded++}` }));
      const dt = process.hrtime.bigint() - t0;
      if (dt > maxRecordNs) maxRecordNs = dt;
    }
  }, TICK_MS);
  // A failed assertion must not leave the producer (and the pipeline) running, or the file hangs instead of failing.
  t.after(async () => {
    clearInterval(producer);
    await p.close().catch(() => {});
    if (!pool.ended) await pool.end().catch(() => {});
  });

  await new Promise((r) => setTimeout(r, 2000));
  const writtenBefore = p.metrics.rowsWritten;
  assert.ok(writtenBefore > 0, 'rows flow before the outage');

  await server.stop();
  await new Promise((r) => setTimeout(r, OUTAGE_MS));
  const spooledDuringOutage = p.metrics.rowsSpooled;
  assert.ok(spooledDuringOutage > 10_000, `the outage sent rows to the spool (${spooledDuringOutage})`);
  assert.ok(readdirSync(join(dataDir, 'trace-spool')).length > 0, 'spool segments on disk');
  assert.ok(warnings.length > 0, 'the outage was logged');

  await server.start();
  await new Promise((r) => setTimeout(r, 2000));
  clearInterval(producer);
  // Replay happens while running, not only at close().
  await waitFor(() => p.metrics.rowsReplayed + p.metrics.duplicatesSkipped >= spooledDuringOutage, 30_000, 'replay');
  await p.close();

  const m = p.metrics;
  t.diagnostic(`recorded ${recorded}, ${JSON.stringify(m)}, max record() ${maxRecordNs} ns`);
  const counted = await countRows(pool, 'organization_id = $1', ['org_outage']);
  assert.deepEqual(counted, { rows: recorded, distinct: recorded }, JSON.stringify(m));
  assert.equal(m.rowsWritten + m.rowsReplayed, recorded);
  assert.equal(m.badSpoolRecords, 0);
  assert.deepEqual(readdirSync(join(dataDir, 'trace-spool')), [], 'spool drained');
  // A wait on Postgres or the disk would take as long as the connect timeout; a GC pause is milliseconds.
  assert.ok(maxRecordNs < 50_000_000n, `record() never blocked (max ${maxRecordNs} ns)`);
  await pool.end();
});
