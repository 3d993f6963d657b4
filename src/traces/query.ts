// Reads for the Traces API (spec 4.4): one organisation's traces, newest
// first, paged by a request_id cursor. Every query is scoped by organisation,
// so another organisation's request_id reads as absent (404), never as 403.
import type pg from 'pg';
import type { TraceRecord, UpstreamAttempt } from '../domain.js';
import { GatewayError } from '../errors.js';

/** Section 2.3, exactly; `payload_url` only when a payload was archived. */
export type TraceView = Pick<TraceRecord,
  | 'request_id' | 'organization_id' | 'api_key_id' | 'provider' | 'model' | 'requested_model' | 'route_reason'
  | 'latency_ms' | 'prompt_tokens' | 'completion_tokens' | 'total_tokens' | 'cost_usd' | 'status_code'
  | 'redactions' | 'streamed' | 'ttfb_ms' | 'stream_aborted' | 'disclosed_bytes'> & { payload_url?: string }
  // Beyond section 2.3: when it happened, and what the console needs to explain a row.
  & Pick<TraceRecord, 'endpoint' | 'error_code' | 'dry_run'> & { created_at: string }
  // Present only when retries or a fallback happened (docs/limits.md).
  & { attempts?: UpstreamAttempt[]; fallback_from?: string };

/** Values as they come off the query string (strings) or from code (numbers). */
export interface ListTracesQuery {
  limit?: string | number | undefined;
  startingAfter?: string | undefined;
  status?: string | number | undefined;
  provider?: string | undefined;
  model?: string | undefined;
  /** An api_key_id. */
  key?: string | undefined;
  streamed?: boolean | undefined;
  aborted?: boolean | undefined;
}

export interface TraceReadOptions {
  /** Mints a fresh signed payload URL; without it, payload_url is never set. */
  mintUrl?: (requestId: string) => string;
}

export const LIMIT_DEFAULT = 50;
export const LIMIT_MAX = 200;
const MAX_ID_LENGTH = 256;

const VIEW_COLUMNS = `request_id, organization_id, api_key_id, provider, model, requested_model, route_reason,
  latency_ms, prompt_tokens, completion_tokens, total_tokens, cost_usd, status_code, redactions, streamed,
  ttfb_ms, stream_aborted, disclosed_bytes, endpoint, error_code, dry_run, created_at, has_payload, attempts, fallback_from`;

type Row = Omit<TraceView, 'payload_url' | 'created_at' | 'attempts' | 'fallback_from'>
  & { has_payload: boolean; created_at: Date; attempts: UpstreamAttempt[] | null; fallback_from: string | null };

function toView(row: Row, opts: TraceReadOptions): TraceView {
  const { has_payload, created_at, attempts, fallback_from, ...rest } = row;
  const view: TraceView = { ...rest, created_at: created_at.toISOString() };
  if (attempts) view.attempts = attempts;
  if (fallback_from) view.fallback_from = fallback_from;
  return has_payload && opts.mintUrl ? { ...view, payload_url: opts.mintUrl(row.request_id) } : view;
}

function intParam(value: string | number | undefined, param: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = typeof value === 'number' ? value : /^\d{1,9}$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new GatewayError('invalid_request', `${param} must be an integer from ${min} to ${max}.`, { param });
  }
  return n;
}

function stringParam(value: string | undefined, param: string): string | undefined {
  if (value === undefined) return undefined;
  // Postgres refuses NUL in text: caught here, it is the caller's 400 rather than a failed query.
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_ID_LENGTH || value.includes('\0')) {
    throw new GatewayError('invalid_request', `${param} must be a non-empty string of at most ${MAX_ID_LENGTH} characters, without NUL.`, { param });
  }
  return value;
}

export async function listTraces(
  pool: pg.Pool, orgId: string, query: ListTracesQuery, opts: TraceReadOptions = {},
): Promise<{ data: TraceView[]; has_more: boolean }> {
  const limit = intParam(query.limit, 'limit', 1, LIMIT_MAX) ?? LIMIT_DEFAULT;
  const status = intParam(query.status, 'status', 100, 599);
  const provider = stringParam(query.provider, 'provider');
  const cursor = stringParam(query.startingAfter, 'starting_after');
  const model = stringParam(query.model, 'model');
  const key = stringParam(query.key, 'key');

  const args: unknown[] = [orgId];
  let where = 'organization_id = $1';
  if (status !== undefined) where += ` AND status_code = $${args.push(status)}`;
  if (provider !== undefined) where += ` AND provider = $${args.push(provider)}`;
  if (model !== undefined) where += ` AND model = $${args.push(model)}`;
  if (key !== undefined) where += ` AND api_key_id = $${args.push(key)}`;
  if (query.streamed !== undefined) where += ` AND streamed = $${args.push(query.streamed)}`;
  if (query.aborted !== undefined) where += ` AND stream_aborted = $${args.push(query.aborted)}`;
  if (cursor !== undefined) {
    const found = await pool.query<{ created_at: Date }>(
      'SELECT created_at FROM traces WHERE organization_id = $1 AND request_id = $2 LIMIT 1', [orgId, cursor]);
    const row = found.rows[0];
    if (!row) throw new GatewayError('invalid_request', 'starting_after is not a trace of this organisation.', { param: 'starting_after' });
    // Spelled out rather than as a row comparison, so that `created_at <=` can bound the index scan.
    const at = `$${args.push(row.created_at)}`;
    where += ` AND created_at <= ${at} AND (created_at < ${at} OR request_id < $${args.push(cursor)})`;
  }
  const res = await pool.query<Row>(
    `SELECT ${VIEW_COLUMNS} FROM traces WHERE ${where} ORDER BY created_at DESC, request_id DESC LIMIT ${limit + 1}`, args);
  const rows = res.rows.slice(0, limit);
  return { data: rows.map((r) => toView(r, opts)), has_more: res.rows.length > limit };
}

/** Undefined when the trace does not exist or belongs to another organisation: both are 404. */
export async function getTrace(pool: pg.Pool, orgId: string, requestId: string, opts: TraceReadOptions = {}): Promise<TraceView | undefined> {
  if (requestId.length === 0 || requestId.length > MAX_ID_LENGTH || requestId.includes('\0')) return undefined;
  const res = await pool.query<Row>(
    `SELECT ${VIEW_COLUMNS} FROM traces WHERE organization_id = $1 AND request_id = $2 LIMIT 1`, [orgId, requestId]);
  const row = res.rows[0];
  return row ? toView(row, opts) : undefined;
}
