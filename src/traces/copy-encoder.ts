// Encodes trace rows in Postgres COPY text format. A single bad value makes
// the whole COPY fail, and a batch that can never be written would sit in the
// spool forever, so every value is coerced here into something its column
// accepts: integers are rounded and clamped, NUL bytes are removed.
//
// A gateway thread encodes its rows here and sends the main thread's writer
// the text (an EncodedTrace per row): a string crosses threads for a copy,
// where a row object cost a structured clone at each end, and the writer has
// nothing left to encode. decodeTraceRow turns a line back into a row for the
// spool, which stores rows; encoding that row again gives the same line.
import type { TraceRecord } from '../domain.js';

/** A row already in COPY text, with what the writer reads before writing it: the day, for its partition. */
export interface EncodedTrace {
  /** One COPY line, newline included. */
  line: string;
  created_at: number;
  payload?: undefined;
}

/** What the trace writer buffers: rows recorded in its own thread, or lines encoded in a gateway thread. */
export type BufferedTrace = TraceRecord | EncodedTrace;

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

/**
 * Texts that needed no escaping, remembered: most of a row's (organisation,
 * key, endpoint, provider, model, route) repeat from row to row, and a lookup
 * costs a third of the regex test. Bounded for texts a caller makes up (a
 * requested model); emptied when full. A text unique to its row (the request
 * id) goes through `text`.
 */
const plainTexts = new Set<string>();
const MAX_PLAIN = 4096;

function repeated(v: string | null | undefined): string {
  if (v === null || v === undefined) return '\\N';
  if (plainTexts.has(v)) return v;
  const s = text(v);
  if (s === v) {
    if (plainTexts.size >= MAX_PLAIN) plainTexts.clear();
    plainTexts.add(v);
  }
  return s;
}

/** For NOT NULL columns: a missing value becomes the empty string rather than failing the batch. */
function req(v: string | null | undefined, encode = repeated): string {
  return v === null || v === undefined ? '' : encode(v);
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

/** Narrows to a row that has one (not merely to a row: a row without a payload must stay possible in the else branch). */
export function hasPayload(t: BufferedTrace): t is TraceRecord & { payload: NonNullable<TraceRecord['payload']> } {
  return t.payload !== undefined && t.payload !== null;
}

export function encodeTraceRow(t: TraceRecord): string {
  return req(t.request_id, text) + '\t' + req(t.organization_id) + '\t' + req(t.api_key_id) + '\t'
    + req(t.endpoint) + '\t' + repeated(t.provider) + '\t' + repeated(t.model) + '\t' + repeated(t.requested_model) + '\t'
    + repeated(t.route_reason) + '\t' + int(t.latency_ms) + '\t' + int(t.prompt_tokens) + '\t'
    + int(t.completion_tokens) + '\t' + int(t.total_tokens) + '\t' + float(t.cost_usd) + '\t'
    + int(t.status_code) + '\t' + repeated(t.error_code) + '\t' + int(t.redactions) + '\t' + bool(t.streamed) + '\t'
    + (t.ttfb_ms === null || t.ttfb_ms === undefined ? '\\N' : float(t.ttfb_ms)) + '\t'
    + bool(t.stream_aborted) + '\t' + int(t.disclosed_bytes) + '\t' + bool(t.dry_run) + '\t'
    + bool(hasPayload(t)) + '\t' + timestamp(t.created_at) + '\t'
    + (t.attempts ? text(JSON.stringify(t.attempts)) : '\\N') + '\t' + repeated(t.fallback_from) + '\n';
}

export function encodeTraceRows(rows: readonly BufferedTrace[]): string {
  let out = '';
  for (const t of rows) out += 'line' in t ? t.line : encodeTraceRow(t);
  return out;
}

const UNESCAPED: Record<string, string> = { '\\': '\\', t: '\t', n: '\n', r: '\r' };

function untext(v: string): string | null {
  return v === '\\N' ? null : v.includes('\\') ? v.replace(/\\(.)/g, (_, c: string) => UNESCAPED[c] ?? c) : v;
}

/** The row a line of encodeTraceRow was made from, as far as the line holds it (no payload; NULs gone). */
export function decodeTraceRow(line: string): TraceRecord {
  const f = line.replace(/\n$/, '').split('\t');
  const s = (i: number) => untext(f[i] ?? '\\N');
  const n = (i: number) => Number(f[i]);
  const attempts = s(23);
  return {
    request_id: s(0) ?? '', organization_id: s(1) ?? '', api_key_id: s(2) ?? '', endpoint: (s(3) ?? '') as TraceRecord['endpoint'],
    provider: s(4), model: s(5), requested_model: s(6), route_reason: s(7),
    latency_ms: n(8), prompt_tokens: n(9), completion_tokens: n(10), total_tokens: n(11), cost_usd: n(12),
    status_code: n(13), error_code: s(14), redactions: n(15), streamed: f[16] === 't',
    ttfb_ms: f[17] === '\\N' ? null : n(17), stream_aborted: f[18] === 't', disclosed_bytes: n(19), dry_run: f[20] === 't',
    created_at: Date.parse(f[22] ?? ''), attempts: attempts === null ? null : JSON.parse(attempts) as TraceRecord['attempts'],
    fallback_from: s(24),
  };
}

/** The row behind a buffered trace, for the spool. */
export function traceRecordOf(t: BufferedTrace): TraceRecord {
  return 'line' in t ? decodeTraceRow(t.line) : t;
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
