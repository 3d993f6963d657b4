// GET /v1/usage query parameters. Every bad or unknown parameter is a 400 that
// names it; nothing is clamped or ignored. The window is whole buckets ending
// with the bucket that holds `end`, so a chart never shows a bucket cut in two.
import { GatewayError } from '../errors.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

export const RANGES = { '1h': HOUR, '24h': DAY, '7d': 7 * DAY, '30d': 30 * DAY } as const;
export const BUCKETS = { '1m': MINUTE, '5m': 5 * MINUTE, '15m': 15 * MINUTE, '1h': HOUR, '6h': 6 * HOUR, '1d': DAY } as const;
const DEFAULT_BUCKET: Record<Range, Bucket> = { '1h': '1m', '24h': '15m', '7d': '1h', '30d': '6h' };
export const GROUP_BY = ['model', 'provider', 'key'] as const;
/** More points than this is a chart nobody can read, and a slower query. */
export const MAX_POINTS = 1440;
const MAX_TEXT = 256;
const KNOWN = new Set(['range', 'bucket', 'end', 'model', 'provider', 'key', 'group_by']);

export type Range = keyof typeof RANGES;
export type Bucket = keyof typeof BUCKETS;
export type GroupBy = (typeof GROUP_BY)[number];

export interface UsageQuery {
  range: Range;
  bucket: Bucket;
  bucketMs: number;
  /** Window start, inclusive, and end, exclusive (epoch ms), both on bucket boundaries. */
  startMs: number;
  endMs: number;
  model?: string;
  provider?: string;
  key?: string;
  groupBy?: GroupBy;
}

/** The single filter, if any, as the rollups' (dimension, value). */
export function filterOf(q: UsageQuery): { dim: GroupBy; value: string } | undefined {
  for (const dim of GROUP_BY) if (q[dim] !== undefined) return { dim, value: q[dim]! };
  return undefined;
}

const bad = (param: string, message: string) => new GatewayError('invalid_request', `${param} ${message}`, { param });

function oneOf<T extends string>(q: URLSearchParams, name: string, allowed: readonly T[]): T | undefined {
  const v = q.get(name);
  if (v === null) return undefined;
  if (!(allowed as readonly string[]).includes(v)) throw bad(name, `must be one of ${allowed.join(', ')}.`);
  return v as T;
}

function text(q: URLSearchParams, name: string): string | undefined {
  const v = q.get(name);
  if (v === null) return undefined;
  if (v.length === 0 || v.length > MAX_TEXT || v.includes('\0')) throw bad(name, `must be a non-empty string of at most ${MAX_TEXT} characters, without NUL.`);
  return v;
}

/** An ISO 8601 date-time with a zone; Date.parse alone would also take "1" or a local time. */
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):(\d{2}))$/;

function endParam(q: URLSearchParams, now: number): number {
  const v = q.get('end');
  if (v === null) return now;
  const m = DATE_TIME.exec(v);
  if (!m) throw bad('end', 'must be an ISO 8601 date-time with a time zone, such as 2026-01-31T12:00:00Z.');
  // Date.parse rolls a day the month does not have over (February 30 is March 2): a date that is not on the calendar is refused.
  const [y, mo, d, h, mi, sec, oh, om] = m.slice(1).map((x) => Number(x ?? 0)) as [number, number, number, number, number, number, number, number];
  const day = new Date(Date.UTC(y, mo - 1, d));
  if (day.getUTCMonth() !== mo - 1 || day.getUTCDate() !== d || h > 23 || mi > 59 || sec > 59 || oh > 23 || om > 59) {
    throw bad('end', `is not a date and time on the calendar: ${v}.`);
  }
  const ms = Date.parse(v);
  if (!Number.isFinite(ms) || ms < 0) throw bad('end', 'must be at or after 1970-01-01T00:00:00Z.');
  return ms;
}

export function parseUsageQuery(raw: string, now = Date.now()): UsageQuery {
  const q = new URLSearchParams(raw);
  for (const name of q.keys()) {
    if (!KNOWN.has(name)) throw bad(name, `is not a parameter of /v1/usage (expected one of ${[...KNOWN].join(', ')}).`);
    if (q.getAll(name).length > 1) throw bad(name, 'may be given only once.');
  }
  const range = oneOf(q, 'range', Object.keys(RANGES) as Range[]) ?? '24h';
  const bucket = oneOf(q, 'bucket', Object.keys(BUCKETS) as Bucket[]) ?? DEFAULT_BUCKET[range];
  const rangeMs = RANGES[range];
  const bucketMs = BUCKETS[bucket];
  if (bucketMs > rangeMs) throw bad('bucket', `must not be longer than the range (${range}).`);
  if (rangeMs / bucketMs > MAX_POINTS) throw bad('bucket', `gives ${rangeMs / bucketMs} points over ${range}; at most ${MAX_POINTS} are allowed.`);
  const endMs = (Math.floor(endParam(q, now) / bucketMs) + 1) * bucketMs;
  const out: UsageQuery = { range, bucket, bucketMs, startMs: endMs - rangeMs, endMs };
  const model = text(q, 'model');
  const provider = text(q, 'provider');
  const key = text(q, 'key');
  const groupBy = oneOf(q, 'group_by', GROUP_BY);
  if (model !== undefined) out.model = model;
  if (provider !== undefined) out.provider = provider;
  if (key !== undefined) out.key = key;
  if (groupBy !== undefined) out.groupBy = groupBy;
  // The rollups keep each dimension apart (migration 006), so one filter at a time, and none with group_by.
  const filters = (['model', 'provider', 'key'] as const).filter((f) => out[f] !== undefined);
  if (filters.length > 1) throw bad(filters[1]!, `cannot be combined with ${filters[0]}; filter by one of model, provider or key.`);
  if (filters.length && groupBy) throw bad('group_by', `cannot be combined with the ${filters[0]} filter.`);
  return out;
}
