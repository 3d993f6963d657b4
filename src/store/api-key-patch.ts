// PATCH /v1/api-keys/{id}: the name and role of a live key in one organisation.
import type pg from 'pg';
import type { KeyRole, KeyView } from './api-keys-repo.js';

interface Row { id: string; name: string; prefix: string; role: KeyRole; created_at: Date; last_used_at: Date | null; key_hash: Buffer }

/**
 * Undefined when no live key has this id in `org`. Fields left undefined keep
 * their value. The UPDATE takes the key's row lock even when it changes
 * nothing, so inside a transaction it also serializes the PATCHes of that key.
 */
export async function patchKey(db: pg.Pool | pg.PoolClient, org: string, id: string, p: { name?: string | undefined; role?: KeyRole | undefined }): Promise<{ view: KeyView; hash: Buffer } | undefined> {
  const { rows } = await db.query<Row>(
    `UPDATE api_keys SET name = coalesce($3, name), role = coalesce($4, role)
     WHERE id = $1 AND organization_id = $2 AND revoked_at IS NULL
     RETURNING id, name, prefix, role, created_at, last_used_at, key_hash`,
    [id, org, p.name ?? null, p.role ?? null],
  );
  const r = rows[0];
  if (!r) return undefined;
  return {
    view: { id: r.id, name: r.name, prefix: r.prefix, role: r.role, created_at: r.created_at.toISOString(), last_used_at: r.last_used_at?.toISOString() ?? null },
    hash: r.key_hash,
  };
}
