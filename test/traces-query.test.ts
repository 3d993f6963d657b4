// The Traces API reads (spec 4.4): newest first, limit, cursor, filters,
// has_more, validation, tenant isolation, and a fresh payload_url per read.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, stopTestPostgres, type TestDatabase } from './helpers/pg.js';
import { applyTraceMigration, sampleTrace, traceSettings } from './helpers/trace-fixtures.js';
import { TracePipeline } from '../src/traces/pipeline.js';
import { getTrace, listTraces } from '../src/traces/query.js';
import { GatewayError } from '../src/errors.js';
import type { TraceRecord } from '../src/domain.js';

let db: TestDatabase;
let pool: pg.Pool;
let dataDir: string;
/** org_q's 130 traces, newest first. */
let mine: TraceRecord[] = [];
const base = Date.parse('2026-11-21T10:00:00Z');

before(async () => {
  db = await createTestDatabase();
  await applyTraceMigration(db.url);
  pool = new pg.Pool({ connectionString: db.url, max: 4 });
  dataDir = mkdtempSync(join(tmpdir(), 'sluice-traces-q-'));
  const p = new TracePipeline({ pool, settings: traceSettings(), dataDir });
  p.start();
  for (let i = 0; i < 130; i++) {
    // Pairs share a timestamp so that the cursor must break ties on request_id.
    const t = sampleTrace({
      organization_id: 'org_q', request_id: `req_q_${String(i).padStart(3, '0')}`, created_at: base + Math.floor(i / 2) * 1000,
      provider: i % 3 === 0 ? 'anthropic' : 'openai', status_code: i % 5 === 0 ? 502 : 200,
      ...(i === 7 ? { payload: '{"request":{"a":1},"response":{"b":2}}' } : {}),
    });
    mine.push(t);
    p.record(t);
  }
  for (let i = 0; i < 20; i++) p.record(sampleTrace({ organization_id: 'org_other', created_at: base + i * 1000 }));
  await p.close();
  mine = mine.sort((a, b) => b.created_at - a.created_at || (a.request_id < b.request_id ? 1 : -1));
});

after(async () => {
  await pool.end();
  await db.drop();
  await stopTestPostgres();
  rmSync(dataDir, { recursive: true, force: true });
});

test('newest first, default limit 50, has_more', async () => {
  const page = await listTraces(pool, 'org_q', {});
  assert.equal(page.data.length, 50);
  assert.equal(page.has_more, true);
  assert.deepEqual(page.data.map((t) => t.request_id), mine.slice(0, 50).map((t) => t.request_id));
});

test('the starting_after cursor walks every trace exactly once', async () => {
  const seen: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  for (;;) {
    const page = await listTraces(pool, 'org_q', { limit: '40', startingAfter: cursor });
    pages++;
    seen.push(...page.data.map((t) => t.request_id));
    if (!page.has_more) break;
    cursor = page.data.at(-1)?.request_id;
  }
  assert.equal(pages, 4);
  assert.deepEqual(seen, mine.map((t) => t.request_id));
});

test('limit 200 is the maximum; an exact fit has has_more false', async () => {
  const page = await listTraces(pool, 'org_q', { limit: 200 });
  assert.equal(page.data.length, 130);
  assert.equal(page.has_more, false);
  const exact = await listTraces(pool, 'org_q', { limit: 10, startingAfter: mine[119]?.request_id });
  assert.equal(exact.data.length, 10);
  assert.equal(exact.has_more, false);
});

test('status and provider filters, alone and together', async () => {
  const s = await listTraces(pool, 'org_q', { status: '502', limit: 200 });
  assert.deepEqual(s.data.map((t) => t.request_id), mine.filter((t) => t.status_code === 502).map((t) => t.request_id));
  const pr = await listTraces(pool, 'org_q', { provider: 'anthropic', limit: 200 });
  assert.equal(pr.data.length, mine.filter((t) => t.provider === 'anthropic').length);
  assert.ok(pr.data.every((t) => t.provider === 'anthropic'));
  const both = await listTraces(pool, 'org_q', { provider: 'anthropic', status: 502, limit: 5 });
  assert.ok(both.data.every((t) => t.provider === 'anthropic' && t.status_code === 502));
  assert.equal(both.data.length, 5);
  assert.equal(both.has_more, true, '130/15 = 9 traces match');
});

test('model, key, streamed and aborted filters', async () => {
  const m = await listTraces(pool, 'org_q', { model: 'gpt-4o-mini', limit: 200 });
  assert.equal(m.data.length, 130);
  assert.equal((await listTraces(pool, 'org_q', { model: 'nope' })).data.length, 0);
  assert.equal((await listTraces(pool, 'org_q', { key: 'key_1', limit: 200 })).data.length, 130);
  assert.equal((await listTraces(pool, 'org_q', { key: 'key_other' })).data.length, 0);
  assert.equal((await listTraces(pool, 'org_q', { streamed: true })).data.length, 0);
  assert.equal((await listTraces(pool, 'org_q', { aborted: false, limit: 200 })).data.length, 130);
});

test('bad query values are invalid_request naming the parameter', async () => {
  const cases: [Parameters<typeof listTraces>[2], string][] = [
    [{ limit: '0' }, 'limit'], [{ limit: '201' }, 'limit'], [{ limit: 'ten' }, 'limit'], [{ limit: '1.5' }, 'limit'],
    [{ status: '99' }, 'status'], [{ status: 'ok' }, 'status'], [{ provider: '' }, 'provider'],
    [{ startingAfter: 'req_unknown' }, 'starting_after'],
  ];
  for (const [query, param] of cases) {
    await assert.rejects(listTraces(pool, 'org_q', query), (err: unknown) => {
      assert.ok(err instanceof GatewayError);
      assert.equal(err.code, 'invalid_request');
      assert.equal(err.param, param);
      return true;
    }, JSON.stringify(query));
  }
});

test('tenant isolation: another organisation sees none of these traces', async () => {
  const other = await listTraces(pool, 'org_other', { limit: 200 });
  assert.equal(other.data.length, 20);
  assert.ok(other.data.every((t) => t.organization_id === 'org_other'));
  assert.equal(await getTrace(pool, 'org_other', 'req_q_001'), undefined);
  await assert.rejects(listTraces(pool, 'org_other', { startingAfter: 'req_q_001' }), GatewayError, 'a foreign cursor is unknown');
});

test('getTrace returns the section 2.3 fields exactly, payload_url only with a payload', async () => {
  const t = await getTrace(pool, 'org_q', 'req_q_008');
  assert.ok(t);
  assert.deepEqual(Object.keys(t).sort(), [
    'api_key_id', 'completion_tokens', 'cost_usd', 'created_at', 'disclosed_bytes', 'dry_run', 'endpoint', 'error_code',
    'latency_ms', 'model', 'organization_id', 'prompt_tokens', 'provider', 'redactions', 'request_id', 'requested_model',
    'route_reason', 'status_code', 'stream_aborted', 'streamed', 'total_tokens', 'ttfb_ms',
  ]);
  assert.equal(t.created_at, new Date(mine.find((x) => x.request_id === 'req_q_008')!.created_at).toISOString());
  let minted = 0;
  const mintUrl = (id: string): string => `https://gw.example/v1/payloads/${id}?n=${++minted}`;
  assert.equal((await getTrace(pool, 'org_q', 'req_q_008', { mintUrl }))?.payload_url, undefined);
  const a = await getTrace(pool, 'org_q', 'req_q_007', { mintUrl });
  const b = await getTrace(pool, 'org_q', 'req_q_007', { mintUrl });
  assert.equal(a?.payload_url, 'https://gw.example/v1/payloads/req_q_007?n=1');
  assert.notEqual(a?.payload_url, b?.payload_url, 'each read mints a fresh URL');
  const listed = await listTraces(pool, 'org_q', { limit: 200 }, { mintUrl });
  assert.equal(listed.data.filter((x) => x.payload_url).length, 1);
});
