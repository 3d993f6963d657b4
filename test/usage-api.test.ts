// GET /v1/usage over a real gateway and Postgres: rows go in through the real
// trace writer (COPY, and the idempotent replay path), the migration-006
// trigger keeps the rollups, and the endpoint answers buckets, breakdowns and
// group_by; tenant isolation, roles and every bad parameter are checked.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, type TestGateway } from './helpers/gateway.js';
import { stopTestPostgres } from './helpers/pg.js';
import { call } from './helpers/management.js';
import { sampleTrace, traceSettings } from './helpers/trace-fixtures.js';
import { TracePipeline } from '../src/traces/pipeline.js';
import { PartitionKeeper } from '../src/traces/partitions.js';
import { writeBatch } from '../src/traces/pg-writer.js';
import { createKey, ensureOrganizations } from '../src/store/api-keys-repo.js';
import type { TraceRecord } from '../src/domain.js';

const MIN = 60_000;
const HOUR = 60 * MIN;
// Two whole hours ago, so that every row sits in closed minute and hour buckets.
const T0 = Math.floor(Date.now() / HOUR) * HOUR - 2 * HOUR;
const END = new Date(T0 + 59 * MIN).toISOString();

let gw: TestGateway;
let adminA: string;
let adminB: string;
let userA: string;
let keyA1: string;
let keyA2: string;
let keyB: string;
let dataDir: string;

function row(over: Partial<TraceRecord>): TraceRecord {
  return sampleTrace({ organization_id: 'org_a', api_key_id: keyA1, ...over });
}

/** org_a: 10 rows at T0+5m on gpt-4o-mini (key 1), 4 at T0+20m on claude (key 2, 2 of them errors), one dry run. org_b: 7 rows. */
function fixture(): TraceRecord[] {
  const rows: TraceRecord[] = [];
  for (let i = 0; i < 10; i++) {
    rows.push(row({ created_at: T0 + 5 * MIN + i * 1000, latency_ms: 100 + i * 10, prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, cost_usd: 0.001, streamed: i < 4, ttfb_ms: i < 4 ? 40 : null }));
  }
  for (let i = 0; i < 4; i++) {
    rows.push(row({
      created_at: T0 + 20 * MIN + i * 1000, api_key_id: keyA2, provider: 'anthropic', model: 'claude-sonnet-4', latency_ms: 2500,
      status_code: i < 2 ? 502 : 200, prompt_tokens: 100, completion_tokens: 50, total_tokens: 150, cost_usd: 0.01,
    }));
  }
  rows.push(row({ created_at: T0 + 30 * MIN, dry_run: true, cost_usd: 5 }));
  for (let i = 0; i < 7; i++) rows.push(sampleTrace({ organization_id: 'org_b', api_key_id: keyB, created_at: T0 + 5 * MIN + i, cost_usd: 1 }));
  return rows;
}

before(async () => {
  gw = await startGateway({ config: { organizations: [{ id: 'org_a', models: ['mock-echo'] }, { id: 'org_b', models: ['mock-echo'] }] } });
  const pool = gw.app.services.pool;
  await ensureOrganizations(pool, ['org_a', 'org_b']);
  adminA = (await createKey(pool, 'org_a', 'ops', 'admin')).key;
  userA = (await createKey(pool, 'org_a', 'app', 'user')).key;
  adminB = (await createKey(pool, 'org_b', 'ops-b', 'admin')).key;
  keyA1 = (await createKey(pool, 'org_a', 'backend', 'user')).id;
  keyA2 = (await createKey(pool, 'org_a', 'batch-jobs', 'user')).id;
  keyB = (await createKey(pool, 'org_b', 'other', 'user')).id;
  dataDir = mkdtempSync(join(tmpdir(), 'sluice-usage-'));
  const p = new TracePipeline({ pool, settings: traceSettings(), dataDir });
  p.start();
  const rows = fixture();
  for (const r of rows) p.record(r);
  await p.close();
  // A spool replay of the same rows must not count them twice.
  await writeBatch(pool, new PartitionKeeper(), rows.slice(0, 5), true);
});

after(async () => {
  await gw.close();
  await stopTestPostgres();
  rmSync(dataDir, { recursive: true, force: true });
});

const usage = (key: string, query: string) => call(gw.url, key, 'GET', `/v1/usage?${query}`);

test('1h in 1m buckets: every minute, zero-filled, with the right sums', async () => {
  const r = await usage(adminA, `range=1h&end=${END}`);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.object, 'usage');
  assert.equal(r.body.bucket, '1m');
  assert.equal(r.body.series.length, 60);
  assert.equal(r.body.start, new Date(T0).toISOString());
  assert.equal(r.body.end, new Date(T0 + HOUR).toISOString());
  const at5 = r.body.series[5];
  assert.equal(at5.start, new Date(T0 + 5 * MIN).toISOString());
  assert.equal(at5.requests, 10);
  assert.equal(at5.errors, 0);
  assert.equal(at5.streamed, 4);
  assert.equal(at5.total_tokens, 150);
  assert.ok(Math.abs(at5.cost_usd - 0.01) < 1e-9);
  assert.equal(at5.latency_avg_ms, 145);
  assert.ok(at5.latency_p50_ms >= 100 && at5.latency_p50_ms <= 200, String(at5.latency_p50_ms));
  assert.equal(at5.ttfb_avg_ms, 40);
  assert.ok(at5.ttfb_p50_ms >= 25 && at5.ttfb_p50_ms <= 50);
  const at20 = r.body.series[20];
  assert.equal(at20.requests, 4);
  assert.equal(at20.errors, 2);
  assert.equal(at20.error_rate, 0.5);
  assert.ok(at20.latency_p95_ms >= 2000 && at20.latency_p95_ms <= 3000);
  assert.equal(r.body.series[6].requests, 0);
  assert.equal(r.body.series[6].latency_p50_ms, null);
  // The dry run (cost 5) is not usage; org_b's rows are not org_a's.
  assert.equal(r.body.totals.requests, 14);
  assert.ok(Math.abs(r.body.totals.cost_usd - 0.05) < 1e-9, String(r.body.totals.cost_usd));
  assert.equal(r.body.totals.prompt_tokens, 500);
});

test('breakdowns by model, provider and key, with key names', async () => {
  const r = await usage(adminA, `range=24h&end=${END}`);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.series.length, 96);
  const { model, provider, key } = r.body.breakdowns;
  assert.deepEqual(model.map((m: any) => [m.model, m.requests]), [['gpt-4o-mini', 10], ['claude-sonnet-4', 4]]);
  assert.deepEqual(provider.map((m: any) => [m.provider, m.requests, m.errors]), [['openai', 10, 0], ['anthropic', 4, 2]]);
  assert.deepEqual(key.map((k: any) => [k.key, k.name, k.requests]), [[keyA1, 'backend', 10], [keyA2, 'batch-jobs', 4]]);
});

test('7d and 30d read the hourly and daily rollups and agree with the minutes', async () => {
  for (const range of ['7d', '30d']) {
    const daily = await usage(adminA, `range=${range}&bucket=1d&end=${END}`);
    assert.equal(daily.body.totals.requests, 14, `${range} by day`);
    assert.deepEqual(daily.body.breakdowns.key.map((k: any) => k.requests), [10, 4]);
    const r = await usage(adminA, `range=${range}&end=${END}`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.totals.requests, 14, range);
    assert.ok(Math.abs(r.body.totals.cost_usd - 0.05) < 1e-9);
    const hour = await usage(adminA, `range=${range}&bucket=1h&end=${END}`);
    const point = hour.body.series.find((p: any) => p.start === new Date(T0).toISOString());
    assert.equal(point.requests, 14);
    assert.equal(point.errors, 2);
  }
});

test('filters and group_by', async () => {
  const f = await usage(adminA, `range=1h&end=${END}&provider=anthropic`);
  assert.equal(f.body.totals.requests, 4);
  assert.deepEqual(f.body.filters, { model: null, provider: 'anthropic', key: null });
  assert.equal((await usage(adminA, `range=1h&end=${END}&key=${keyA1}`)).body.totals.requests, 10);
  assert.equal((await usage(adminA, `range=1h&end=${END}&model=nope`)).body.totals.requests, 0);
  const g = await usage(adminA, `range=1h&end=${END}&group_by=key`);
  assert.equal(g.body.group_by, 'key');
  assert.deepEqual(g.body.groups.map((x: any) => [x.value, x.name, x.requests]), [[keyA1, 'backend', 10], [keyA2, 'batch-jobs', 4]]);
  assert.equal(g.body.groups[1].series.length, 60);
  assert.equal(g.body.groups[1].series[20].errors, 2);
});

test('tenant isolation: each organisation sees only its own usage', async () => {
  const b = await usage(adminB, `range=1h&end=${END}`);
  assert.equal(b.status, 200);
  assert.equal(b.body.totals.requests, 7);
  assert.equal(b.body.totals.cost_usd, 7);
  assert.deepEqual(b.body.breakdowns.key.map((k: any) => k.key), [keyB]);
  // Naming another organisation's key filters to nothing rather than revealing it.
  const foreign = await usage(adminB, `range=1h&end=${END}&key=${keyA1}`);
  assert.equal(foreign.status, 200);
  assert.equal(foreign.body.totals.requests, 0);
  assert.equal(foreign.body.breakdowns, null, 'breakdowns are not given under a filter');
  const groups = await usage(adminB, `range=1h&end=${END}&group_by=key`);
  assert.deepEqual(groups.body.groups.map((g: any) => g.value), [keyB]);
});

test('roles: a user key is 403, no key is 401', async () => {
  assert.equal((await usage(userA, 'range=1h')).status, 403);
  assert.equal((await call(gw.url, undefined, 'GET', '/v1/usage')).status, 401);
});

test('bad parameters are 400 invalid_request naming the parameter', async () => {
  const cases: Array<[string, string]> = [
    ['range=2h', 'range'], ['range=', 'range'], ['bucket=2m', 'bucket'], ['range=1h&bucket=1d', 'bucket'],
    ['range=30d&bucket=1m', 'bucket'], ['end=yesterday', 'end'], ['end=2026-01-01', 'end'], ['end=2026-01-01T00:00:00', 'end'],
    // Not on the calendar: Date.parse would roll them over (February 30 is March 2).
    ['end=2026-02-30T00:00:00Z', 'end'], ['end=2026-04-31T00:00:00Z', 'end'], ['end=2026-01-01T24:00:00Z', 'end'], ['end=2026-01-01T00:60:00Z', 'end'],
    ['end=2026-01-01T00:00:00%2B25:00', 'end'], ['end=1969-12-31T23:59:59Z', 'end'],
    ['group_by=team', 'group_by'], ['model=', 'model'], ['provider=', 'provider'], ['key=', 'key'],
    ['org=org_b', 'org'], ['range=1h&range=24h', 'range'], ['model=a&key=b', 'key'], ['provider=p&group_by=model', 'group_by'],
  ];
  for (const [query, param] of cases) {
    const r = await usage(adminA, query);
    assert.equal(r.status, 400, query);
    assert.equal(r.body.error.code, 'invalid_request', query);
    assert.equal(r.body.error.param, param, query);
    assert.ok(r.body.error.message.startsWith(param), r.body.error.message);
  }
});

test('defaults: 24h in 15m buckets ending now', async () => {
  const r = await usage(adminA, '');
  assert.equal(r.status, 200);
  assert.equal(r.body.range, '24h');
  assert.equal(r.body.bucket, '15m');
  assert.ok(Date.parse(r.body.end) > Date.now() && Date.parse(r.body.end) <= Date.now() + 15 * MIN);
  assert.equal(r.body.totals.requests, 14);
});

test('cover: whole days, then hours, then minutes, with no gap or overlap', async () => {
  const { cover } = await import('../src/usage/query.js');
  const D = 24 * HOUR;
  const from = 3 * D + 5 * HOUR + 15 * MIN;
  const to = 10 * D + 2 * HOUR + 30 * MIN;
  const segs = cover(from, to);
  assert.deepEqual(segs[0], ['usage_day', 4 * D, 10 * D]);
  const sorted = [...segs].sort((a, b) => a[1] - b[1]);
  assert.equal(sorted[0]![1], from);
  assert.equal(sorted.at(-1)![2], to);
  for (let i = 1; i < sorted.length; i++) assert.equal(sorted[i]![1], sorted[i - 1]![2]);
  assert.deepEqual(cover(5 * MIN, 20 * MIN), [['usage_minute', 5 * MIN, 20 * MIN]]);
});
