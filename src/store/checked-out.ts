// A pooled client held across several queries. pg-pool listens for a client's
// 'error' only while the client is idle; once checked out, a connection that
// dies (a Postgres restart mid-COPY) makes the client emit 'error' with nobody
// listening, which is an uncaught exception that ends the whole gateway. The
// failure still reaches the pending query as its rejection, so the listener
// only has to exist.
import type pg from 'pg';

const heard = (): void => {};

/** Checks a client out with an 'error' listener; pass it back through `release` so the listener goes with it. */
export async function checkOut(pool: pg.Pool): Promise<pg.PoolClient> {
  const client = await pool.connect();
  client.on('error', heard);
  return client;
}

/** Returns a client from `checkOut` to the pool (or destroys it, given the error that broke it). */
export function checkIn(client: pg.PoolClient, broken?: Error): void {
  client.off('error', heard);
  client.release(broken);
}
