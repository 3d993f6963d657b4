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

export async function openDatabase(opts: { url?: string | undefined; dataDir: string; log?: (m: string) => void; max?: number }): Promise<Database> {
  const embedded = opts.url ? undefined : await startEmbeddedPostgres(opts.dataDir, opts.log);
  const url = opts.url ?? embedded!.url;
  const pool = new pg.Pool({ connectionString: url, max: opts.max ?? 10, idleTimeoutMillis: 30_000 });
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
      await pool.end().catch(() => {});
      await embedded?.stop();
    },
  };
}

export const defaultDataDir = (env: NodeJS.ProcessEnv = process.env): string => env.SLUICE_DATA_DIR ?? join(process.cwd(), '.sluice');
