// Shared by the traces-* tests and the trace bench: the migration (applied
// directly, independent of the migration runner), sample rows and settings.
import pg from 'pg';
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import type { TraceRecord } from '../../src/domain.js';
import { traceSettingsSchema, type TraceSettings } from '../../src/traces/config-schema.js';

const MIGRATION = new URL('../../../migrations/003_traces.sql', import.meta.url);

export async function applyTraceMigration(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('BEGIN');
    await client.query(readFileSync(MIGRATION, 'utf8'));
    await client.query('COMMIT');
  } finally {
    await client.end();
  }
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
