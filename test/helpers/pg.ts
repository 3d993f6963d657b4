// Each test file gets its own fresh database on the real Postgres named by
// DATABASE_URL (CI sets it), or on an embedded Postgres started once per file
// when it is unset, so that `npm test` also passes on a machine without one.
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbeddedPostgres, type EmbeddedHandle } from '../../src/store/embedded-postgres.js';

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

let embedded: { handle: EmbeddedHandle; dir: string } | undefined;

async function adminUrl(): Promise<string> {
  if (process.env.DATABASE_URL) return process.env.DATABASE_URL;
  if (!embedded) {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-pg-'));
    embedded = { handle: await startEmbeddedPostgres(dir), dir };
  }
  return embedded.handle.url;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const admin = await adminUrl();
  const name = `sluice_t_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  await client.query(`CREATE DATABASE ${name}`);
  await client.end();
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      // pg's Pool.end() resolves before its sockets have closed: a forced drop at once terminates those
      // sessions mid-goodbye, and the client's 'error' then has no listener (an uncaught exception in the
      // test file). Sessions still ending get up to 2 s to go; only what is left after that is forced.
      for (let waited = 0; waited < 2_000; waited += 20) {
        const { rows } = await c.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1', [name]);
        if (rows[0]!.n === 0) break;
        await new Promise((ok) => setTimeout(ok, 20));
      }
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/** Stops the embedded Postgres, if this file started one. Call from a top-level after(). */
export async function stopTestPostgres(): Promise<void> {
  if (!embedded) return;
  await embedded.handle.stop();
  rmSync(embedded.dir, { recursive: true, force: true });
  embedded = undefined;
}
