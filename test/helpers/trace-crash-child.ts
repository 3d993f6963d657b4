// The child side of traces-crash.test: records traces as fast as it can with
// Postgres unreachable, so that every batch goes to the spool, and reports the
// durable count on stdout until the parent kills it with SIGKILL.
// Exported rather than run at import: `node --test dist/test/` also executes
// every file under test/helpers.
import pg from 'pg';
import { TracePipeline } from '../../src/traces/pipeline.js';
import { sampleTrace, traceSettings } from './trace-fixtures.js';

export function runCrashChild(dataDir: string, fsync: string): void {
  const pool = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/unreachable', connectionTimeoutMillis: 200 });
  const settings = traceSettings({ batch_size: 200, batch_age_ms: 10, buffer_capacity: 1000, spool_fsync: fsync });
  const p = new TracePipeline({ pool, dataDir, settings });
  p.start();
  let n = 0;
  let reported = -1;
  setInterval(() => {
    for (let i = 0; i < 500; i++) p.record(sampleTrace({ organization_id: 'org_crash', request_id: `req_crash_${n++}` }));
    const spooled = p.metrics.rowsSpooled;
    if (spooled !== reported) {
      reported = spooled;
      process.stdout.write(`spooled ${spooled}\n`);
    }
  }, 1);
}
