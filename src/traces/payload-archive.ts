// The payload archive: the request as sent upstream (after redaction) and the
// response, stored as gzip of their JSON in `trace_payloads`, a table
// partitioned by day like `traces` and dropped with it by retention. It lives
// in Postgres rather than on local disk because every gateway instance behind
// the load balancer must be able to serve any payload link.
// Compression runs on the libuv thread pool (async zlib), so the event loop
// only pays for JSON.stringify.
import type pg from 'pg';
import { gzip, gunzip } from 'node:zlib';
import { promisify } from 'node:util';
import type { TraceRecord } from '../domain.js';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

export type Payload = NonNullable<TraceRecord['payload']>;

/**
 * A payload JSON cannot encode (a BigInt, a cycle) is archived as an error
 * note: throwing here would fail its whole batch on every retry, and block
 * the spool replay behind it.
 */
export async function compressPayload(payload: Payload): Promise<Buffer> {
  let json: string;
  try {
    json = JSON.stringify({ request: payload.request ?? null, response: payload.response ?? null });
  } catch (err) {
    json = JSON.stringify({ request: null, response: null, error: `payload not serialisable: ${(err as Error).message}` });
  }
  return gzipAsync(json, { level: 6 });
}

export async function decompressPayload(body: Buffer): Promise<Payload> {
  return JSON.parse((await gunzipAsync(body)).toString('utf8')) as Payload;
}

/**
 * The archived payload of one request, or undefined. No organisation check:
 * the caller must first have verified the link's signature, which is the
 * authorisation (see signed-url.ts).
 */
export async function fetchPayload(pool: pg.Pool, requestId: string): Promise<Payload | undefined> {
  const res = await pool.query<{ body: Buffer }>('SELECT body FROM trace_payloads WHERE request_id = $1 LIMIT 1', [requestId]);
  const row = res.rows[0];
  return row ? decompressPayload(row.body) : undefined;
}
