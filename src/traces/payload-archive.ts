// The payload archive: the request as sent upstream (after redaction) and the
// response, stored as gzip of their JSON in `trace_payloads`, a table
// partitioned by day like `traces` and dropped with it by retention. It lives
// in Postgres rather than on local disk because every gateway instance behind
// the load balancer must be able to serve any payload link.
// The JSON text is made as the request ends (payloadText, in the gateway
// thread that served it); compression runs on the libuv thread pool (async
// zlib), so the writer's event loop pays for neither.
import type pg from 'pg';
import { gzip, gunzip } from 'node:zlib';
import { promisify } from 'node:util';
import type { TracePayload } from '../domain.js';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/**
 * A payload's JSON text. One JSON cannot encode (a BigInt, a cycle, nesting
 * deeper than the stack) is archived as an error note: throwing would lose
 * the request's trace, and, further on, fail its whole batch on every retry
 * and block the spool replay behind it.
 */
export function payloadText(payload: TracePayload): string {
  try {
    return JSON.stringify({ request: payload.request ?? null, response: payload.response ?? null });
  } catch (err) {
    return JSON.stringify({ request: null, response: null, error: `payload not serialisable: ${(err as Error).message}` });
  }
}

/** Its text gzipped; a spool written before payloads were text holds the objects. */
export async function compressPayload(payload: string | TracePayload): Promise<Buffer> {
  return gzipAsync(typeof payload === 'string' ? payload : payloadText(payload), { level: 6 });
}

export async function decompressPayload(body: Buffer): Promise<TracePayload> {
  return JSON.parse((await gunzipAsync(body)).toString('utf8')) as TracePayload;
}

/**
 * The archived payload of one request, or undefined. No organisation check:
 * the caller must first have verified the link's signature, which is the
 * authorisation (see signed-url.ts).
 */
export async function fetchPayload(pool: pg.Pool, requestId: string): Promise<TracePayload | undefined> {
  const res = await pool.query<{ body: Buffer }>('SELECT body FROM trace_payloads WHERE request_id = $1 LIMIT 1', [requestId]);
  const row = res.rows[0];
  return row ? decompressPayload(row.body) : undefined;
}
