// API keys in Postgres. Only the SHA-256 digest of a secret is stored.
import type pg from 'pg';
import { newKeyMaterial } from '../auth/key-format.js';

export type KeyRole = 'admin' | 'user';

/** What authentication resolves a key to. */
export interface KeyRecord {
  id: string;
  organization_id: string;
  name: string;
  role: KeyRole;
}

/**
 * A KeyRecord of one fixed shape, whatever object it was read from. Every
 * function on the request path that reads the key is optimised for one V8
 * hidden class ("map"); a record with another deoptimises them all at once.
 * pg's rows have moving maps (each is cloned from a per-query template, and
 * the clone's map changes with the other queries the process has run), which
 * in gateway threads made a wave of deopts each time a refresh met a new one.
 */
export const keyRecord = (r: KeyRecord): KeyRecord => ({ id: r.id, organization_id: r.organization_id, name: r.name, role: r.role });

export interface KeyView {
  id: string;
  name: string;
  prefix: string;
  role: KeyRole;
  created_at: string;
  last_used_at: string | null;
}

interface KeyRow { id: string; name: string; prefix: string; role: KeyRole; created_at: Date; last_used_at: Date | null }

const view = (r: KeyRow): KeyView => ({
  id: r.id,
  name: r.name,
  prefix: r.prefix,
  role: r.role,
  created_at: r.created_at.toISOString(),
  last_used_at: r.last_used_at ? r.last_used_at.toISOString() : null,
});

export async function ensureOrganizations(pool: pg.Pool, ids: readonly string[]): Promise<void> {
  if (!ids.length) return;
  await pool.query('INSERT INTO organizations (id) SELECT unnest($1::text[]) ON CONFLICT (id) DO NOTHING', [ids]);
}

export async function createKey(pool: pg.Pool, org: string, name: string, role: KeyRole): Promise<KeyView & { key: string }> {
  const m = newKeyMaterial();
  const { rows } = await pool.query<KeyRow>(
    `INSERT INTO api_keys (id, organization_id, name, prefix, key_hash, role) VALUES ($1, $2, $3, $4, $5, $6)
     RETURNING id, name, prefix, role, created_at, last_used_at`,
    [m.id, org, name, m.prefix, m.hash, role],
  );
  return { ...view(rows[0]!), key: m.secret };
}

export async function listKeys(pool: pg.Pool, org: string): Promise<KeyView[]> {
  const { rows } = await pool.query<KeyRow>(
    `SELECT id, name, prefix, role, created_at, last_used_at FROM api_keys
     WHERE organization_id = $1 AND revoked_at IS NULL ORDER BY created_at DESC, id`,
    [org],
  );
  return rows.map(view);
}

/** Revokes within `org` when given (tenant isolation), anywhere otherwise (the CLI). Returns the digest, to invalidate caches. */
export async function revokeKey(pool: pg.Pool, id: string, org?: string): Promise<Buffer | undefined> {
  const { rows } = await pool.query<{ key_hash: Buffer }>(
    `UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL AND ($2::text IS NULL OR organization_id = $2)
     RETURNING key_hash`,
    [id, org ?? null],
  );
  return rows[0]?.key_hash;
}

/** The hash of a key revoked already, so that a retried revoke can announce it again. */
export async function revokedKeyHash(pool: pg.Pool, id: string): Promise<Buffer | undefined> {
  const { rows } = await pool.query<{ key_hash: Buffer }>('SELECT key_hash FROM api_keys WHERE id = $1 AND revoked_at IS NOT NULL', [id]);
  return rows[0]?.key_hash;
}

export async function findKeyByHash(pool: pg.Pool, hash: Buffer): Promise<KeyRecord | undefined> {
  const { rows } = await pool.query<KeyRecord>(
    'SELECT id, organization_id, name, role FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL',
    [hash],
  );
  return rows[0] && keyRecord(rows[0]);
}

/** One statement for every key used since the last flush; never older than what is stored. */
export async function touchLastUsed(pool: pg.Pool, seen: ReadonlyMap<string, number>): Promise<void> {
  if (!seen.size) return;
  const ids = [...seen.keys()];
  const times = ids.map((id) => new Date(seen.get(id)!));
  await pool.query(
    `UPDATE api_keys k SET last_used_at = v.t FROM unnest($1::text[], $2::timestamptz[]) AS v(id, t)
     WHERE k.id = v.id AND (k.last_used_at IS NULL OR k.last_used_at < v.t)`,
    [ids, times],
  );
}
