// The Postgres tier of key lookups: the system of record, used on a cache miss.
import type pg from 'pg';
import type { KeyLookup } from '../auth/authenticator.js';
import { findKeyByHash } from './api-keys-repo.js';

export function postgresKeyLookup(pool: pg.Pool): KeyLookup {
  return { lookup: async (hash) => (await findKeyByHash(pool, hash)) ?? null };
}
