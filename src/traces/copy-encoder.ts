// Encodes trace rows in Postgres COPY text format. A single bad value makes
// the whole COPY fail, and a batch that can never be written would sit in the
// spool forever, so every value is coerced here into something its column
// accepts: integers are rounded and clamped, NUL bytes are removed.
import type { TraceRecord } from '../domain.js';

export const TRACE_COLUMNS = [
  'request_id', 'organization_id', 'api_key_id', 'endpoint', 'provider', 'model', 'requested_model',
  'route_reason', 'latency_ms', 'prompt_tokens', 'completion_tokens', 'total_tokens', 'cost_usd',
  'status_code', 'error_code', 'redactions', 'streamed', 'ttfb_ms', 'stream_aborted', 'disclosed_bytes',
  'dry_run', 'has_payload', 'created_at', 'attempts', 'fallback_from',
] as const;

export const PAYLOAD_COLUMNS = ['request_id', 'created_at', 'organization_id', 'body'] as const;

const INT_MAX = 2_147_483_647;
const NEEDS_ESCAPE = /[\\\t\n\r\0]/;

function text(v: string | null | undefined): string {
  if (v === null || v === undefined) return '\\N';
  const s = String(v);
  if (!NEEDS_ESCAPE.test(s)) return s;
  return s.replace(/[\\\t\n\r\0]/g, (c) => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : c === '\r' ? '\\r' : ''));
}

/** For NOT NULL columns: a missing value becomes the empty string rather than failing the batch. */
function req(v: string | null | undefined): string {
  return v === null || v === undefined ? '' : text(v);
}

function int(v: number): string {
  if (!Number.isFinite(v)) return '0';
  const r = Math.round(v);
  return String(r > INT_MAX ? INT_MAX : r < -INT_MAX ? -INT_MAX : r);
}

function float(v: number): string {
  return Number.isFinite(v) ? String(v) : '0';
}

function bool(v: boolean): string {
  return v ? 't' : 'f';
}

/**
 * Date#toISOString was a third of the encoding cost. Rows in a batch mostly
 * share their second, so the `YYYY-MM-DDTHH:MM:SS.` prefix is cached and only
 * the milliseconds are formatted. Anything outside years 1970..9999 (which
 * Postgres might reject or misread) becomes the epoch.
 */
const MAX_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
let cachedSecond = NaN;
let cachedPrefix = '';
export function timestamp(ms: number): string {
  let t = Number.isFinite(ms) ? Math.floor(ms) : 0;
  if (t < 0 || t > MAX_MS) t = 0;
  const second = Math.floor(t / 1000);
  if (second !== cachedSecond) {
    cachedSecond = second;
    cachedPrefix = new Date(second * 1000).toISOString().slice(0, -4);
  }
  const milli = t - second * 1000;
  return cachedPrefix + (milli < 10 ? '00' : milli < 100 ? '0' : '') + milli + 'Z';
}

export function hasPayload(t: TraceRecord): boolean {
  return t.payload !== undefined && t.payload !== null;
}

export function encodeTraceRows(rows: readonly TraceRecord[]): string {
  let out = '';
  for (const t of rows) {
    out += req(t.request_id) + '\t' + req(t.organization_id) + '\t' + req(t.api_key_id) + '\t'
      + req(t.endpoint) + '\t' + text(t.provider) + '\t' + text(t.model) + '\t' + text(t.requested_model) + '\t'
      + text(t.route_reason) + '\t' + int(t.latency_ms) + '\t' + int(t.prompt_tokens) + '\t'
      + int(t.completion_tokens) + '\t' + int(t.total_tokens) + '\t' + float(t.cost_usd) + '\t'
      + int(t.status_code) + '\t' + text(t.error_code) + '\t' + int(t.redactions) + '\t' + bool(t.streamed) + '\t'
      + (t.ttfb_ms === null || t.ttfb_ms === undefined ? '\\N' : float(t.ttfb_ms)) + '\t'
      + bool(t.stream_aborted) + '\t' + int(t.disclosed_bytes) + '\t' + bool(t.dry_run) + '\t'
      + bool(hasPayload(t)) + '\t' + timestamp(t.created_at) + '\t'
      + (t.attempts ? text(JSON.stringify(t.attempts)) : '\\N') + '\t' + text(t.fallback_from) + '\n';
  }
  return out;
}

/** One row per compressed payload; bytea goes as hex, its backslash escaped for COPY. */
export function encodePayloadRows(rows: readonly { trace: TraceRecord; body: Buffer }[]): string {
  let out = '';
  for (const { trace, body } of rows) {
    out += req(trace.request_id) + '\t' + timestamp(trace.created_at) + '\t' + req(trace.organization_id)
      + '\t\\\\x' + body.toString('hex') + '\n';
  }
  return out;
}
