// Per-key limits in Postgres (migrations/005_limits.sql), and the spend sums
// that seed budget counters. Read by the poller and the management API, never
// by a request.
import type pg from 'pg';
import type { LimitSpec } from '../config/resilience-schema.js';

export interface KeyLimitsRow { api_key_id: string; organization_id: string; limits: LimitSpec }

interface Row {
  api_key_id: string; organization_id: string; rpm: number | null; tpm: number | null;
  budget_usd: number | null; budget_period: 'day' | 'month' | null; updated_at: Date;
}

export function specOf(r: Pick<Row, 'rpm' | 'tpm' | 'budget_usd' | 'budget_period'>): LimitSpec {
  const s: LimitSpec = {};
  if (r.rpm !== null) s.rpm = r.rpm;
  if (r.tpm !== null) s.tpm = r.tpm;
  if (r.budget_usd !== null && r.budget_period !== null) s.budget_usd = { amount: r.budget_usd, period: r.budget_period };
  return s;
}

export const isEmptySpec = (s: LimitSpec): boolean => s.rpm === undefined && s.tpm === undefined && s.budget_usd === undefined;

/** Writes a key's limits whole (an empty spec clears them); the row stays so pollers see the change. */
export async function putKeyLimits(db: pg.Pool | pg.PoolClient, keyId: string, org: string, s: LimitSpec): Promise<void> {
  await db.query(
    `INSERT INTO api_key_limits (api_key_id, organization_id, rpm, tpm, budget_usd, budget_period) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (api_key_id) DO UPDATE SET rpm = $3, tpm = $4, budget_usd = $5, budget_period = $6, updated_at = clock_timestamp()`,
    [keyId, org, s.rpm ?? null, s.tpm ?? null, s.budget_usd?.amount ?? null, s.budget_usd?.period ?? null],
  );
}

export async function getKeyLimits(db: pg.Pool | pg.PoolClient, keyIds: readonly string[]): Promise<Map<string, LimitSpec>> {
  const { rows } = await db.query<Row>('SELECT * FROM api_key_limits WHERE api_key_id = ANY($1::text[])', [keyIds]);
  return new Map(rows.map((r) => [r.api_key_id, specOf(r)]));
}

/** Rows changed since `since` (Postgres clock), and the Postgres time of this read for the next poll. */
export async function keyLimitsChangedSince(pool: pg.Pool, since: Date | null): Promise<{ rows: KeyLimitsRow[]; at: Date }> {
  const { rows } = await pool.query<Row & { now: Date }>(
    `SELECT l.*, clock_timestamp() AS now FROM api_key_limits l JOIN api_keys k ON k.id = l.api_key_id
     WHERE k.revoked_at IS NULL AND ($1::timestamptz IS NULL OR l.updated_at > $1)`,
    [since],
  );
  const at = rows[0]?.now ?? (await pool.query<{ now: Date }>('SELECT clock_timestamp() AS now')).rows[0]!.now;
  return { rows: rows.map((r) => ({ api_key_id: r.api_key_id, organization_id: r.organization_id, limits: specOf(r) })), at };
}

/** Spend recorded in traces since `fromMs`, per organisation or per key. Dry runs spend nothing. */
export async function spendSince(pool: pg.Pool, column: 'organization_id' | 'api_key_id', ids: readonly string[], fromMs: number): Promise<Map<string, number>> {
  if (!ids.length) return new Map();
  const { rows } = await pool.query<{ id: string; spent: number }>(
    `SELECT ${column} AS id, coalesce(sum(cost_usd), 0)::float8 AS spent FROM traces
     WHERE ${column} = ANY($1::text[]) AND created_at >= $2 AND NOT dry_run GROUP BY ${column}`,
    [ids, new Date(fromMs)],
  );
  return new Map(rows.map((r) => [r.id, r.spent]));
}
