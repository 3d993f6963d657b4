// Routing rules in Postgres. Every query is scoped by organisation, so another
// organisation's id behaves exactly like an id that does not exist. The
// rules_version bump happens in a trigger (migrations/002_routes.sql).
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { inTransaction } from './transaction.js';

export type ActionKind = 'pin' | 'auto';

/** The writable part of a rule, already validated. */
export interface RouteDefinition {
  name: string;
  priority: number;
  enabled: boolean;
  action_kind: ActionKind;
  match: { requested_model: string };
  action: { provider?: string; model?: string; fallbacks?: Array<{ provider: string; model: string }> };
}

export interface RouteView extends RouteDefinition {
  id: string;
  created_at: string;
  updated_at: string;
}

interface RouteRow extends RouteDefinition { id: string; organization_id: string; created_at: Date; updated_at: Date }

const COLUMNS = 'id, organization_id, name, priority, enabled, action_kind, match, action, created_at, updated_at';
/** Evaluation order: priority first; among equals the older rule wins, then the id breaks the tie for good. */
export const EVALUATION_ORDER = 'priority DESC, created_at, id';

const view = (r: RouteRow): RouteView => ({
  id: r.id,
  name: r.name,
  priority: r.priority,
  enabled: r.enabled,
  action_kind: r.action_kind,
  match: r.match,
  action: r.action,
  created_at: r.created_at.toISOString(),
  updated_at: r.updated_at.toISOString(),
});

/** Thrown when `name` is already used in the organisation. */
export class DuplicateRouteName extends Error {}

async function guardUnique<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if ((err as { code?: string }).code === '23505') throw new DuplicateRouteName();
    throw err;
  }
}

export async function createRoute(pool: pg.Pool, org: string, d: RouteDefinition): Promise<RouteView> {
  const id = `route_${randomBytes(12).toString('base64url')}`;
  const { rows } = await guardUnique(() => pool.query<RouteRow>(
    `INSERT INTO routes (id, organization_id, name, priority, enabled, action_kind, match, action)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${COLUMNS}`,
    [id, org, d.name, d.priority, d.enabled, d.action_kind, d.match, d.action],
  ));
  return view(rows[0]!);
}

export async function getRoute(pool: pg.Pool, org: string, id: string): Promise<RouteView | undefined> {
  const { rows } = await pool.query<RouteRow>(`SELECT ${COLUMNS} FROM routes WHERE id = $1 AND organization_id = $2`, [id, org]);
  return rows[0] && view(rows[0]);
}

/** Replaces every writable field; undefined when the rule does not exist in `org`. */
export async function replaceRoute(db: pg.Pool | pg.PoolClient, org: string, id: string, d: RouteDefinition): Promise<RouteView | undefined> {
  const { rows } = await guardUnique(() => db.query<RouteRow>(
    `UPDATE routes SET name = $3, priority = $4, enabled = $5, action_kind = $6, match = $7, action = $8,
       updated_at = clock_timestamp()
     WHERE id = $1 AND organization_id = $2 RETURNING ${COLUMNS}`,
    [id, org, d.name, d.priority, d.enabled, d.action_kind, d.match, d.action],
  ));
  return rows[0] && view(rows[0]);
}

/**
 * PATCH: `merge` turns the stored rule into the new definition (and may throw
 * a 400), and the result is written, all under the row's lock: a concurrent
 * PATCH waits, then merges onto this one's result, so neither change is lost
 * (until 2026-11-29 both read the same row and the later write undid the
 * earlier). Undefined when the rule does not exist in `org`.
 */
export async function patchRoute(pool: pg.Pool, org: string, id: string, merge: (current: RouteView) => RouteDefinition): Promise<RouteView | undefined> {
  return inTransaction(pool, async (client) => {
    const { rows } = await client.query<RouteRow>(`SELECT ${COLUMNS} FROM routes WHERE id = $1 AND organization_id = $2 FOR UPDATE`, [id, org]);
    if (!rows[0]) return undefined;
    return replaceRoute(client, org, id, merge(view(rows[0])));
  });
}

export async function deleteRoute(pool: pg.Pool, org: string, id: string): Promise<boolean> {
  const { rowCount } = await pool.query('DELETE FROM routes WHERE id = $1 AND organization_id = $2', [id, org]);
  return rowCount === 1;
}

export async function listRoutes(pool: pg.Pool, org: string, q: { enabled?: boolean; limit: number }): Promise<{ data: RouteView[]; has_more: boolean }> {
  const { rows } = await pool.query<RouteRow>(
    `SELECT ${COLUMNS} FROM routes WHERE organization_id = $1 AND ($2::boolean IS NULL OR enabled = $2)
     ORDER BY ${EVALUATION_ORDER} LIMIT $3`,
    [org, q.enabled ?? null, q.limit + 1],
  );
  return { data: rows.slice(0, q.limit).map(view), has_more: rows.length > q.limit };
}

/** Every rule of the given organisations, in evaluation order, for the rule compiler. */
export async function loadRules(pool: pg.Pool, orgs: readonly string[]): Promise<Array<RouteView & { organization_id: string }>> {
  const { rows } = await pool.query<RouteRow>(
    `SELECT ${COLUMNS} FROM routes WHERE organization_id = ANY($1::text[]) ORDER BY organization_id, ${EVALUATION_ORDER}`,
    [orgs],
  );
  return rows.map((r) => ({ ...view(r), organization_id: r.organization_id }));
}

export async function rulesVersions(pool: pg.Pool): Promise<Map<string, string>> {
  const { rows } = await pool.query<{ id: string; rules_version: string }>('SELECT id, rules_version FROM organizations');
  return new Map(rows.map((r) => [r.id, r.rules_version]));
}
