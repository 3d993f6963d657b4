// Shared by the traces-* tests and the trace bench: the migration (applied
// directly, independent of the migration runner), sample rows and settings,
// and the database and temp dirs a traces test file sets up and removes.
import pg from 'pg';
import { after, before } from 'node:test';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TraceRecord } from '../../src/domain.js';
import { traceSettingsSchema, type TraceSettings } from '../../src/traces/config-schema.js';
import { createTestDatabase, stopTestPostgres, type TestDatabase } from './pg.js';

// 005 adds the attempts columns to traces; it needs the api_keys table of 001.
const MIGRATIONS = ['001_core.sql', '003_traces.sql', '005_limits.sql'].map((f) => new URL(`../../../migrations/${f}`, import.meta.url));

export async function applyTraceMigration(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('BEGIN');
    for (const m of MIGRATIONS) await client.query(readFileSync(m, 'utf8'));
    await client.query('COMMIT');
  } finally {
    await client.end();
  }
}

export interface TraceDatabase {
  /** A fresh directory under the OS temp dir, removed after the file's tests. */
  tempDir(prefix: string): string;
}

/**
 * Registers the hooks of a traces test file: before, a fresh database with the
 * traces table and a pool on it; after, the pool, the database, the embedded
 * Postgres (if this file started one) and every tempDir are gone. The pool is
 * handed to `onPool` rather than read in a later hook, because Node 20 starts
 * a file's top-level before() hooks without waiting for the previous one.
 */
export function useTraceDatabase(onPool: (pool: pg.Pool) => void): TraceDatabase {
  let db: TestDatabase;
  let pool: pg.Pool;
  const dirs: string[] = [];

  before(async () => {
    db = await createTestDatabase();
    await applyTraceMigration(db.url);
    pool = new pg.Pool({ connectionString: db.url, max: 4 });
    onPool(pool);
  });

  after(async () => {
    await pool.end();
    await db.drop();
    await stopTestPostgres();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  return {
    tempDir(prefix) {
      const d = mkdtempSync(join(tmpdir(), prefix));
      dirs.push(d);
      return d;
    },
  };
}

export function traceSettings(overrides: Record<string, unknown> = {}): TraceSettings {
  return traceSettingsSchema.parse(overrides);
}

export function sampleTrace(overrides: Partial<TraceRecord> = {}): TraceRecord {
  return {
    request_id: `req_${randomUUID()}`,
    organization_id: 'org_a',
    api_key_id: 'key_1',
    endpoint: 'chat',
    provider: 'openai',
    model: 'gpt-4o-mini',
    requested_model: 'auto',
    route_reason: 'default',
    latency_ms: 120,
    prompt_tokens: 10,
    completion_tokens: 20,
    total_tokens: 30,
    cost_usd: 0.000123,
    status_code: 200,
    error_code: null,
    redactions: 0,
    streamed: false,
    ttfb_ms: null,
    stream_aborted: false,
    disclosed_bytes: 0,
    dry_run: false,
    attempts: null,
    fallback_from: null,
    created_at: Date.now(),
    ...overrides,
  };
}

export async function countRows(pool: pg.Pool, where = 'true', args: unknown[] = []): Promise<{ rows: number; distinct: number }> {
  const res = await pool.query<{ rows: string; distinct: string }>(
    `SELECT count(*) AS rows, count(DISTINCT request_id) AS distinct FROM traces WHERE ${where}`, args);
  const r = res.rows[0];
  return { rows: Number(r?.rows), distinct: Number(r?.distinct) };
}

/** Polls until `check` holds, or fails after `timeoutMs`. */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
