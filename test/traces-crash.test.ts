// kill -9 of a gateway that is spooling: every row it reported as spooled is
// replayed by the next process, exactly once; a torn last record is skipped.
// This file is also the child: the parent re-runs it with CHILD_ENV set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { countRows, traceSettings, useTraceDatabase } from './helpers/trace-fixtures.js';
import { runCrashChild } from './helpers/trace-crash-child.js';
import { TracePipeline } from '../src/traces/pipeline.js';

const CHILD_ENV = 'SLUICE_TRACE_CRASH_CHILD';

/** Runs the child until it reports at least `target` spooled rows, SIGKILLs it, and returns the last count it reported. */
async function spoolThenKill(dataDir: string, fsync: string, target: number): Promise<number> {
  // Without NODE_TEST_CONTEXT the child is a plain process, not a test-runner subprocess.
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url)], {
    stdio: ['ignore', 'pipe', 'inherit'], env: { ...env, [CHILD_ENV]: JSON.stringify([dataDir, fsync]) },
  });
  let last = 0;
  const exited = new Promise<NodeJS.Signals | null>((res) => child.once('exit', (_code, signal) => res(signal)));
  for await (const line of createInterface({ input: child.stdout })) {
    const m = /^spooled (\d+)$/.exec(line);
    if (m) last = Number(m[1]);
    if (last >= target) { child.kill('SIGKILL'); break; }
  }
  assert.equal(await exited, 'SIGKILL');
  return last;
}

function registerTests(): void {
  let pool: pg.Pool;
  const traces = useTraceDatabase((p) => { pool = p; });

  for (const fsync of ['always', 'never'] as const) {
    test(`kill -9 while spooling (fsync ${fsync}) loses no spooled row and replays each once`, { timeout: 60_000 }, async (t) => {
      const dataDir = traces.tempDir('sluice-crash-');
      const org = 'org_crash';
      await pool.query('DELETE FROM traces WHERE organization_id = $1', [org]);
      const reported = await spoolThenKill(dataDir, fsync, 20_000);

      const p = new TracePipeline({ pool, dataDir, settings: traceSettings() });
      p.start();
      await p.close();
      const counted = await countRows(pool, 'organization_id = $1', [org]);
      t.diagnostic(`child reported ${reported} spooled; replayed ${counted.rows}; bad records ${p.metrics.badSpoolRecords}`);
      assert.ok(counted.rows >= reported, `every row reported spooled was replayed (${counted.rows} >= ${reported})`);
      assert.equal(counted.distinct, counted.rows, 'no duplicates');
      assert.ok(p.metrics.badSpoolRecords <= 1, 'at most the record torn by the kill');
      // Request ids are sequential in the child: no hole below the reported count.
      const holes = await pool.query(
        `SELECT count(*)::int AS n FROM generate_series(0, $1::int - 1) AS i
         WHERE NOT EXISTS (SELECT 1 FROM traces WHERE request_id = 'req_crash_' || i)`, [reported]);
      assert.equal(holes.rows[0].n, 0);
    });
  }
}

const childArgs = process.env[CHILD_ENV];
if (childArgs) {
  const [dataDir, fsync] = JSON.parse(childArgs) as [string, string];
  runCrashChild(dataDir, fsync);
} else {
  registerTests();
}
