// Opens the system of record: DATABASE_URL when given, otherwise an embedded
// Postgres under the data directory. Migrations run before anything else uses it.
import pg from 'pg';
import { join } from 'node:path';
import { startEmbeddedPostgres } from './embedded-postgres.js';
import { migrate } from './migrate.js';

export interface Database {
  pool: pg.Pool;
  url: string;
  embedded: boolean;
  close(): Promise<void>;
}

/** How long a query waits for a connection, new or pooled, before it fails. */
const CONNECT_TIMEOUT_MS = 10_000;
/** How long closing waits for the pool's clients to come back. */
const END_WAIT_MS = 5_000;

export async function openDatabase(opts: { url?: string | undefined; dataDir: string; log?: (m: string) => void; max?: number }): Promise<Database> {
  const embedded = opts.url ? undefined : await startEmbeddedPostgres(opts.dataDir, opts.log);
  const url = opts.url ?? embedded!.url;
  // A Postgres that accepts connections and never answers would hold every connect for ever:
  // a cold key lookup would then never become its 503, nor a management call its error.
  const pool = new pg.Pool({ connectionString: url, max: opts.max ?? 10, idleTimeoutMillis: 30_000, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  // A Postgres restart kills idle clients; without a listener the pool's error event would crash the process.
  pool.on('error', (err) => opts.log?.(`postgres pool: ${err.message}`));
  try {
    await migrate(pool);
  } catch (err) {
    await pool.end().catch(() => {});
    await embedded?.stop();
    throw err;
  }
  return {
    pool,
    url,
    embedded: !!embedded,
    async close() {
      // end() waits for every client to come back; one whose query Postgres never answers never does.
      await Promise.race([pool.end().catch(() => {}), new Promise((r) => setTimeout(r, END_WAIT_MS).unref())]);
      await embedded?.stop();
    },
  };
}

export const defaultDataDir = (env: NodeJS.ProcessEnv = process.env): string => env.SLUICE_DATA_DIR ?? join(process.cwd(), '.sluice');
