// GET /v1/usage: one organisation's usage, read from the rollups of migration
// 006 (never from raw traces). Three reads, run together:
//  - the series: the rollup of the bucket's grain, one dimension value (the
//    total, or the filtered model/provider/key), folded into the buckets;
//  - the breakdowns: the window covered by the coarsest whole buckets (days in
//    the middle, hours and minutes at the edges), so that 30 days by key is a
//    few thousand rows, not 43,200 minutes of them;
//  - with group_by: the series of every value of one dimension.
import type pg from 'pg';
import { HIST_BUCKETS, percentile } from './histogram.js';
import { filterOf, type GroupBy, type UsageQuery } from './params.js';

export interface UsageMetrics {
  requests: number;
  errors: number;
  /** errors / requests; 0 without requests. */
  error_rate: number;
  streamed: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cost_usd: number;
  latency_avg_ms: number | null;
  latency_p50_ms: number | null;
  latency_p95_ms: number | null;
  ttfb_avg_ms: number | null;
  ttfb_p50_ms: number | null;
  ttfb_p95_ms: number | null;
}

export interface UsagePoint extends UsageMetrics { start: string }

export interface UsageReport {
  object: 'usage';
  range: string;
  bucket: string;
  start: string;
  end: string;
  filters: { model: string | null; provider: string | null; key: string | null };
  totals: UsageMetrics;
  series: UsagePoint[];
  /** The whole organisation's, over the window; null under a filter (the rollups keep dimensions apart). */
  breakdowns: {
    model: Array<UsageMetrics & { model: string | null }>;
    provider: Array<UsageMetrics & { provider: string | null }>;
    key: Array<UsageMetrics & { key: string; name: string | null }>;
  } | null;
  group_by?: GroupBy;
  /** With group_by: the series of the busiest values (at most MAX_GROUPS). */
  groups?: Array<{ value: string | null; name?: string | null; requests: number; series: UsagePoint[] }>;
}

/** Rows per breakdown; a busier organisation sees its top ones by requests. */
export const MAX_BREAKDOWN = 100;
export const MAX_GROUPS = 10;

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
const pad = (i: number) => String(i).padStart(2, '0');
const LAT = Array.from({ length: HIST_BUCKETS }, (_, i) => `lat_h${pad(i)}`);
const TTFB = Array.from({ length: HIST_BUCKETS }, (_, i) => `ttfb_h${pad(i)}`);
const SUMMED = ['requests', 'errors', 'streamed', 'prompt_tokens', 'completion_tokens', 'total_tokens', 'cost_usd', 'latency_sum', 'ttfb_count', 'ttfb_sum', ...LAT, ...TTFB];
const SUMS_SQL = SUMMED.map((c) => `sum(${c})::float8 AS ${c}`).join(', ');
const DIM_NAME: Record<string, GroupBy> = { model: 'model', provider: 'provider', key: 'key' };

type Sums = Record<string, number>;
type Row = Record<string, unknown>;

const zero = (): Sums => Object.fromEntries(SUMMED.map((c) => [c, 0]));
const sumsOf = (r: Row): Sums => Object.fromEntries(SUMMED.map((c) => [c, Number(r[c] ?? 0)]));

function metrics(sums: Sums | undefined): UsageMetrics {
  const s = sums ?? zero();
  const v = (c: string): number => s[c] ?? 0;
  const requests = v('requests');
  const errors = v('errors');
  const ttfbCount = v('ttfb_count');
  return {
    requests,
    errors,
    error_rate: requests ? errors / requests : 0,
    streamed: v('streamed'),
    prompt_tokens: v('prompt_tokens'),
    completion_tokens: v('completion_tokens'),
    total_tokens: v('total_tokens'),
    cost_usd: v('cost_usd'),
    latency_avg_ms: requests ? Math.round((v('latency_sum') / requests) * 10) / 10 : null,
    latency_p50_ms: percentile(LAT.map(v), 0.5),
    latency_p95_ms: percentile(LAT.map(v), 0.95),
    ttfb_avg_ms: ttfbCount ? Math.round((v('ttfb_sum') / ttfbCount) * 10) / 10 : null,
    ttfb_p50_ms: percentile(TTFB.map(v), 0.5),
    ttfb_p95_ms: percentile(TTFB.map(v), 0.95),
  };
}

function add(into: Sums, s: Sums): void {
  for (const c of SUMMED) into[c] = (into[c] ?? 0) + (s[c] ?? 0);
}

const tableFor = (bucketMs: number) => (bucketMs >= DAY_MS ? 'usage_day' : bucketMs >= HOUR_MS ? 'usage_hour' : 'usage_minute');

type Segment = [table: string, from: number, to: number];

/** [from, to) as whole days, then whole hours, then minutes at the edges. Bounds are whole minutes. */
export function cover(from: number, to: number, unit = DAY_MS): Segment[] {
  if (from >= to) return [];
  if (unit === MINUTE_MS) return [['usage_minute', from, to]];
  const lo = Math.ceil(from / unit) * unit;
  const hi = Math.floor(to / unit) * unit;
  const finer = unit === DAY_MS ? HOUR_MS : MINUTE_MS;
  if (lo >= hi) return cover(from, to, finer);
  return [[tableFor(unit), lo, hi], ...cover(from, lo, finer), ...cover(hi, to, finer)];
}

/** Every bucket of the window, zero-filled, oldest first. */
function fill(q: UsageQuery, byStart: Map<number, Sums>): UsagePoint[] {
  const out: UsagePoint[] = [];
  for (let t = q.startMs; t < q.endMs; t += q.bucketMs) out.push({ start: new Date(t).toISOString(), ...metrics(byStart.get(t)) });
  return out;
}

/** Rows of one dimension (one value of it, or all) folded into the query's buckets, by value. */
async function seriesRows(pool: pg.Pool, orgId: string, q: UsageQuery, dim: string, values: string[]): Promise<Map<string, Map<number, Sums>>> {
  const args: unknown[] = [orgId, dim, new Date(q.startMs), new Date(q.endMs), `${q.bucketMs / 1000} seconds`];
  const only = values.length === 1 ? ` AND value = $${args.push(values[0])}` : ` AND value = ANY($${args.push(values)})`;
  const { rows } = await pool.query<Row>(
    `SELECT date_bin($5::interval, bucket, 'epoch'::timestamptz) AS b, value, ${SUMS_SQL}
     FROM ${tableFor(q.bucketMs)} WHERE organization_id = $1 AND dim = $2 AND bucket >= $3 AND bucket < $4${only}
     GROUP BY 1, 2`, args);
  const out = new Map<string, Map<number, Sums>>();
  for (const r of rows) {
    const v = r.value as string;
    let m = out.get(v);
    if (!m) out.set(v, (m = new Map()));
    m.set((r.b as Date).getTime(), sumsOf(r));
  }
  return out;
}

async function breakdownRows(pool: pg.Pool, orgId: string, q: UsageQuery): Promise<Row[]> {
  const args: unknown[] = [orgId];
  const parts = cover(q.startMs, q.endMs).map(([table, from, to]) =>
    `SELECT * FROM ${table} WHERE organization_id = $1 AND dim IN ('model', 'provider', 'key')
       AND bucket >= $${args.push(new Date(from))} AND bucket < $${args.push(new Date(to))}`);
  const { rows } = await pool.query<Row>(
    `SELECT dim, value, ${SUMS_SQL} FROM (${parts.join(' UNION ALL ')}) AS c GROUP BY 1, 2`, args);
  return rows;
}

async function keyNames(pool: pg.Pool, orgId: string, ids: string[]): Promise<Map<string, string>> {
  if (!ids.length) return new Map();
  const { rows } = await pool.query<{ id: string; name: string }>(
    'SELECT id, name FROM api_keys WHERE organization_id = $1 AND id = ANY($2)', [orgId, ids]);
  return new Map(rows.map((n) => [n.id, n.name]));
}

const orNull = (v: string) => (v === '' ? null : v);
const byRequests = (a: { requests: number }, b: { requests: number }) => b.requests - a.requests;

export async function queryUsage(pool: pg.Pool, orgId: string, q: UsageQuery): Promise<UsageReport> {
  const filter = filterOf(q);
  const [series, breakdown] = await Promise.all([
    seriesRows(pool, orgId, q, filter?.dim ?? '', [filter?.value ?? '']),
    filter ? undefined : breakdownRows(pool, orgId, q),
  ]);
  // group_by never comes with a filter (params.ts), so the breakdown names the busiest values: only their series are read.
  const top = q.groupBy && breakdown
    ? breakdown.filter((r) => r.dim === q.groupBy).sort((a, b) => Number(b.requests) - Number(a.requests)).slice(0, MAX_GROUPS).map((r) => r.value as string)
    : [];
  const grouped = top.length ? await seriesRows(pool, orgId, q, q.groupBy!, top) : q.groupBy ? new Map<string, Map<number, Sums>>() : undefined;
  const points = series.get(filter?.value ?? '') ?? new Map<number, Sums>();
  const total = zero();
  for (const s of points.values()) add(total, s);

  const report: UsageReport = {
    object: 'usage',
    range: q.range,
    bucket: q.bucket,
    start: new Date(q.startMs).toISOString(),
    end: new Date(q.endMs).toISOString(),
    filters: { model: q.model ?? null, provider: q.provider ?? null, key: q.key ?? null },
    totals: metrics(total),
    series: fill(q, points),
    breakdowns: null,
  };
  let groups = grouped && [...grouped].map(([value, m]) => {
    let requests = 0;
    for (const s of m.values()) requests += s.requests ?? 0;
    return { value: orNull(value), requests, series: fill(q, m) } as NonNullable<UsageReport['groups']>[number];
  }).sort(byRequests).slice(0, MAX_GROUPS);
  if (breakdown) {
    const by: Record<GroupBy, Array<UsageMetrics & { value: string }>> = { model: [], provider: [], key: [] };
    for (const r of breakdown) by[DIM_NAME[r.dim as string]!].push({ value: r.value as string, ...metrics(sumsOf(r)) });
    for (const list of Object.values(by)) list.sort(byRequests).splice(MAX_BREAKDOWN);
    const names = await keyNames(pool, orgId, [...by.key.map((k) => k.value), ...(q.groupBy === 'key' ? groups!.map((g) => g.value!) : [])]);
    report.breakdowns = {
      model: by.model.map(({ value, ...m }) => ({ model: orNull(value), ...m })),
      provider: by.provider.map(({ value, ...m }) => ({ provider: orNull(value), ...m })),
      key: by.key.map(({ value, ...m }) => ({ key: value, name: names.get(value) ?? null, ...m })),
    };
    if (q.groupBy === 'key') groups = groups!.map((g) => ({ ...g, name: names.get(g.value!) ?? null }));
  }
  if (q.groupBy) {
    report.group_by = q.groupBy;
    report.groups = groups!;
  }
  return report;
}
