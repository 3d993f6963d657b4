// GET /v1/usage over 10 million traces. Target (the console issue): the
// endpoint's query answers in under 200 ms at every range.
// Loads USAGE_BENCH_ROWS synthetic traces (default 10,000,000) over the last 30
// days with COPY, through the migration-006 trigger exactly as the trace writer
// does, then checks the rollups against the raw traces before timing anything.
// Run: DATABASE_URL=postgres://... node dist/bench/usage-query.js [--keep]
// --keep leaves the database (sluice_bench_usage) for the next run to reuse.
// A failed check exits non-zero: timings over wrong answers are worthless.
import pg from 'pg';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { from as copyFrom } from 'pg-copy-streams';
import { migrate } from '../src/store/migrate.js';
import { PartitionKeeper } from '../src/traces/partitions.js';
import { TRACE_COLUMNS, encodeTraceRows } from '../src/traces/copy-encoder.js';
import { parseUsageQuery, queryUsage } from '../src/usage/index.js';
import type { TraceRecord } from '../src/domain.js';

const ROWS = Number(process.env.USAGE_BENCH_ROWS ?? 10_000_000);
const BATCH = 50_000;
const DB = 'sluice_bench_usage';
const DAY = 86_400_000;
const KEEP = process.argv.includes('--keep');
const ORG = 'bench';

const MODELS: Array<[provider: string, model: string, promptPrice: number, completionPrice: number]> = [
  ['openai', 'gpt-4o-mini', 0.15, 0.6], ['openai', 'gpt-4o', 2.5, 10], ['openai', 'gpt-4.1-mini', 0.4, 1.6],
  ['anthropic', 'claude-sonnet-4', 3, 15], ['anthropic', 'claude-3-5-haiku', 0.8, 4],
  ['gemini', 'gemini-2.5-flash', 0.3, 2.5], ['gemini', 'gemini-2.5-pro', 1.25, 10], ['deepseek', 'deepseek-chat', 0.27, 1.1],
];
const KEYS = 50;

/** A small deterministic PRNG, so that two runs load the same data. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

/** Skewed like real traffic: a few keys and models carry most requests. */
const skewed = (r: number, n: number) => Math.min(n - 1, Math.floor(n * r * r * r));

function makeRows(from: number, count: number, startMs: number, spanMs: number, rand: () => number): TraceRecord[] {
  const out: TraceRecord[] = [];
  for (let i = 0; i < count; i++) {
    const n = from + i;
    const [provider, model, pp, cp] = MODELS[skewed(rand(), MODELS.length)]!;
    // 10% of rows belong to another organisation, which the query must never count.
    const org = n % 10 === 9 ? 'noise' : ORG;
    const streamed = rand() < 0.4;
    const status = rand() < 0.03 ? (rand() < 0.5 ? 429 : 502) : 200;
    const prompt = 50 + Math.floor(rand() * 2000);
    const completion = status === 200 ? 10 + Math.floor(rand() * 800) : 0;
    const latency = Math.floor(150 + rand() * rand() * 8000);
    out.push({
      request_id: `req_b${n.toString(36)}`, organization_id: org, api_key_id: `key_${org}_${skewed(rand(), KEYS)}`, endpoint: 'chat',
      provider, model, requested_model: 'auto', route_reason: 'default', latency_ms: latency, prompt_tokens: prompt,
      completion_tokens: completion, total_tokens: prompt + completion, cost_usd: (prompt * pp + completion * cp) / 1e6,
      status_code: status, error_code: status === 200 ? null : 'upstream_error', redactions: 0, streamed,
      ttfb_ms: streamed ? Math.floor(80 + rand() * 700) : null, stream_aborted: false, disclosed_bytes: 0, dry_run: false,
      created_at: startMs + Math.floor((n / ROWS) * spanMs),
    });
  }
  return out;
}

async function openBenchDb(admin: string): Promise<{ pool: pg.Pool; fresh: boolean }> {
  const c = new pg.Client({ connectionString: admin });
  await c.connect();
  const exists = (await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [DB])).rowCount === 1;
  if (!exists) await c.query(`CREATE DATABASE ${DB}`);
  await c.end();
  const url = new URL(admin);
  url.pathname = `/${DB}`;
  const pool = new pg.Pool({ connectionString: url.toString(), max: 4 });
  await migrate(pool);
  const have = Number((await pool.query<{ n: string }>('SELECT count(*) AS n FROM traces')).rows[0]?.n);
  if (have === ROWS) return { pool, fresh: false };
  // Every rollup goes with the traces: a rollup left behind would be counted again on top of the reload.
  await pool.query('TRUNCATE traces, usage_minute, usage_hour, usage_day');
  return { pool, fresh: true };
}

async function load(pool: pg.Pool): Promise<number> {
  const end = Date.now();
  const start = end - 30 * DAY + 60_000;
  await new PartitionKeeper().ensureFor(pool, Array.from({ length: 32 }, (_, d) => start + d * DAY));
  const rand = rng(42);
  const t0 = performance.now();
  for (let from = 0; from < ROWS; from += BATCH) {
    const rows = makeRows(from, Math.min(BATCH, ROWS - from), start, end - start - 60_000, rand);
    const client = await pool.connect();
    try {
      await pipeline(Readable.from([encodeTraceRows(rows)]), client.query(copyFrom(`COPY traces (${TRACE_COLUMNS.join(', ')}) FROM STDIN`)));
    } finally {
      client.release();
    }
    if ((from / BATCH) % 20 === 0) process.stdout.write(`  loaded ${(from + rows.length).toLocaleString('en')} rows\n`);
  }
  const seconds = (performance.now() - t0) / 1000;
  await pool.query('VACUUM ANALYZE usage_minute');
  await pool.query('VACUUM ANALYZE usage_hour');
  await pool.query('VACUUM ANALYZE usage_day');
  await pool.query('ANALYZE traces');
  return seconds;
}

/**
 * The rollups must agree with the raw traces before any timing means anything.
 * The totals read one rollup each (minute for 1h, hour for 30d, day for bucket=1d)
 * and the breakdowns add days, hours and minutes, so together they check all three.
 */
async function check(pool: pg.Pool): Promise<void> {
  const failures: string[] = [];
  const expect = (ok: boolean, what: string) => { if (!ok) failures.push(what); };
  for (const query of ['range=1h', 'range=24h', 'range=30d', 'range=30d&bucket=1d']) {
    const q = parseUsageQuery(query);
    const r = await queryUsage(pool, ORG, q);
    const raw = (await pool.query<{ n: string; cost: number | null; errors: string }>(
      `SELECT count(*) AS n, sum(cost_usd) AS cost, count(*) FILTER (WHERE status_code >= 400) AS errors
       FROM traces WHERE organization_id = $1 AND created_at >= $2 AND created_at < $3 AND NOT dry_run`,
      [ORG, new Date(q.startMs), new Date(q.endMs)])).rows[0]!;
    const cost = raw.cost ?? 0;
    const costAgrees = (c: number) => Math.abs(c - cost) < 1e-6 * Math.max(1, cost);
    expect(r.totals.requests === Number(raw.n), `${query}: requests ${r.totals.requests} vs raw ${raw.n}`);
    expect(r.totals.errors === Number(raw.errors), `${query}: errors ${r.totals.errors} vs raw ${raw.errors}`);
    expect(costAgrees(r.totals.cost_usd), `${query}: cost ${r.totals.cost_usd} vs raw ${cost}`);
    for (const dim of ['model', 'provider', 'key'] as const) {
      const rows = r.breakdowns?.[dim] ?? [];
      const requests = rows.reduce((n, b) => n + b.requests, 0);
      expect(requests === Number(raw.n), `${query}: breakdown by ${dim} sums to ${requests} requests vs raw ${raw.n}`);
      expect(costAgrees(rows.reduce((n, b) => n + b.cost_usd, 0)), `${query}: breakdown by ${dim} cost vs raw ${cost}`);
    }
    expect((r.breakdowns?.key ?? []).every((k) => k.key.startsWith(`key_${ORG}_`)), `${query}: another organisation's key`);
    console.log(`check ${query.padEnd(19)}: ${r.totals.requests.toLocaleString('en')} requests, ${failures.length ? 'FAILED so far' : 'agree with the raw traces'}`);
  }
  if (failures.length) throw new Error(`the usage query disagrees with the raw traces:\n  ${failures.join('\n  ')}`);
}

async function time(pool: pg.Pool, query: string, runs = 15): Promise<void> {
  const q = parseUsageQuery(query);
  await queryUsage(pool, ORG, q);
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await queryUsage(pool, ORG, q);
    ms.push(performance.now() - t0);
  }
  ms.sort((a, b) => a - b);
  const p = (x: number) => ms[Math.min(ms.length - 1, Math.floor(x * ms.length))]!.toFixed(1);
  console.log(`${query.padEnd(26)} p50 ${p(0.5).padStart(6)} ms  p95 ${p(0.95).padStart(6)} ms  max ${ms.at(-1)!.toFixed(1).padStart(6)} ms`);
}

async function main(): Promise<void> {
  const admin = process.env.DATABASE_URL;
  if (!admin) throw new Error('DATABASE_URL must name a Postgres the bench may create a database on');
  const { pool, fresh } = await openBenchDb(admin);
  try {
    if (fresh) {
      console.log(`loading ${ROWS.toLocaleString('en')} traces with COPY (through the rollup trigger)...`);
      const s = await load(pool);
      console.log(`load: ${s.toFixed(0)} s, ${Math.round(ROWS / s).toLocaleString('en')} rows/s including the rollup trigger`);
    }
    const sizes = (await pool.query<{ t: string; n: string }>(
      `SELECT 'traces' AS t, count(*) AS n FROM traces UNION ALL SELECT 'usage_minute', count(*) FROM usage_minute
       UNION ALL SELECT 'usage_hour', count(*) FROM usage_hour UNION ALL SELECT 'usage_day', count(*) FROM usage_day`)).rows;
    console.log(sizes.map((r) => `${r.t} ${Number(r.n).toLocaleString('en')} rows`).join(', '));
    await check(pool);
    for (const query of ['range=1h', 'range=24h', 'range=24h&bucket=1h', 'range=7d', 'range=30d', 'range=30d&bucket=1d',
      'range=24h&group_by=model', 'range=30d&group_by=key', 'range=7d&model=gpt-4o']) await time(pool, query);
  } finally {
    await pool.end();
    if (!KEEP) {
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
      await c.end();
    }
  }
}

await main();
