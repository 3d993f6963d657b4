// One transaction on one pooled client, for a management write that reads
// before it writes (a PATCH merges onto the stored row): the read locks the
// row, so a concurrent PATCH of the same row waits for this one's commit and
// merges onto its result instead of overwriting it.
import type pg from 'pg';
import { checkIn, checkOut } from './checked-out.js';

/** Runs `work` between BEGIN and COMMIT; any throw rolls back and is rethrown. */
export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await checkOut(pool);
  try {
    await client.query('BEGIN');
    const out = await work(client);
    await client.query('COMMIT');
    checkIn(client);
    return out;
  } catch (err) {
    // A healthy connection only needs its transaction undone; one that fails even that must not go back to the pool.
    let broken = false;
    await client.query('ROLLBACK').catch(() => { broken = true; });
    checkIn(client, broken ? (err as Error) : undefined);
    throw err;
  }
}
