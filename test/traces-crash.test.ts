// kill -9 of a gateway that is spooling: every row it reported as spooled is
// replayed by the next process, exactly once; a torn last record is skipped.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createTestDatabase, stopTestPostgres, type TestDatabase } from './helpers/pg.js';
import { applyTraceMigration, countRows, traceSettings } from './helpers/trace-fixtures.js';
import { TracePipeline } from '../src/traces/pipeline.js';

const CHILD = new URL('./helpers/trace-crash-child.js', import.meta.url);

let db: TestDatabase;
let pool: pg.Pool;
const dirs: string[] = [];

before(async () => {
  db = await createTestDatabase();
  await applyTraceMigration(db.url);
  pool = new pg.Pool({ connectionString: db.url, max: 4 });
});

after(async () => {
  await pool.end();
  await db.drop();
  await stopTestPostgres();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Runs the child until it reports at least `target` spooled rows, SIGKILLs it, and returns the last count it reported. */
async function spoolThenKill(dataDir: string, fsync: string, target: number): Promise<number> {
  const child = spawn(process.execPath, [CHILD.pathname, dataDir, fsync], { stdio: ['ignore', 'pipe', 'inherit'] });
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

for (const fsync of ['always', 'never'] as const) {
  test(`kill -9 while spooling (fsync ${fsync}) loses no spooled row and replays each once`, { timeout: 60_000 }, async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'sluice-crash-'));
    dirs.push(dataDir);
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
    // Request ids are sequential in the child: the replayed rows are a prefix with no holes below the reported count.
    const holes = await pool.query(
      `SELECT count(*)::int AS n FROM generate_series(0, $1::int - 1) AS i
       WHERE NOT EXISTS (SELECT 1 FROM traces WHERE request_id = 'req_crash_' || i)`, [reported]);
    assert.equal(holes.rows[0].n, 0);
  });
}
