// The COPY write path against real Postgres: field round-trip, batching by
// size and by age, close() flush, payload archive, duplicates, retention.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { countRows, sampleTrace, traceSettings, useTraceDatabase, waitFor } from './helpers/trace-fixtures.js';
import { TracePipeline } from '../src/traces/pipeline.js';
import { compressPayload, fetchPayload, payloadText } from '../src/traces/payload-archive.js';
import { gunzipSync } from 'node:zlib';
import { PartitionKeeper } from '../src/traces/partitions.js';
import { writeBatch } from '../src/traces/pg-writer.js';
import { decodeTraceRow, encodeTraceRow } from '../src/traces/copy-encoder.js';
import type { TraceRecord } from '../src/domain.js';

let pool: pg.Pool;
const traces = useTraceDatabase((p) => { pool = p; });

function pipeline(overrides: Record<string, unknown> = {}): TracePipeline {
  return new TracePipeline({ pool, settings: traceSettings(overrides), dataDir: traces.tempDir('sluice-traces-') });
}

const awkward = (overrides: Partial<TraceRecord> = {}) => sampleTrace({
    organization_id: 'org_roundtrip', endpoint: 'embeddings', provider: 'anthropic', model: 'claude\tx\\y\nz',
    requested_model: null, route_reason: 'rule:cheap', latency_ms: 1234, prompt_tokens: 7, completion_tokens: 0,
    total_tokens: 7, cost_usd: 0.1 + 0.2, status_code: 502, error_code: 'upstream_error', redactions: 3,
    streamed: true, ttfb_ms: 12.5, stream_aborted: true, disclosed_bytes: 4096, dry_run: true,
    attempts: [{ provider: 'anthropic', model: 'claude\tx', status: 503, latency_ms: 40 }, { provider: 'openai', model: 'gpt-4o', status: 200, latency_ms: 90 }],
    fallback_from: 'anthropic/claude\tx',
    created_at: Date.parse('2026-11-22T01:02:03.456Z'),
    ...overrides,
  });

async function assertStored(t: TraceRecord): Promise<void> {
  const res = await pool.query('SELECT * FROM traces WHERE request_id = $1', [t.request_id]);
  assert.equal(res.rows.length, 1);
  const { created_at, has_payload, ...row } = res.rows[0];
  const { created_at: want, ...rest } = t;
  assert.deepEqual(row, rest);
  assert.equal((created_at as Date).getTime(), want);
  assert.equal(has_payload, false);
}

test('every TraceRecord field round-trips, including awkward text', async () => {
  const p = pipeline();
  p.start();
  const t = awkward();
  p.record(t);
  await p.close();
  await assertStored(t);
});

test('rows a gateway thread sent as COPY lines land as the same rows, and a line decodes to its row', async () => {
  const rows = [awkward({ request_id: 'req_line\\N', error_code: '\\N', requested_model: '' }), awkward({ attempts: null, ttfb_ms: null, fallback_from: null }), sampleTrace({ organization_id: 'org_roundtrip' })];
  for (const t of rows) {
    const line = encodeTraceRow(t);
    assert.deepEqual(decodeTraceRow(line), { ...t, attempts: t.attempts ?? null });
    assert.equal(encodeTraceRow(decodeTraceRow(line)), line);
  }
  const p = pipeline();
  p.start();
  p.recordEncoded(rows.map(encodeTraceRow).join(''), rows.map((t) => t.created_at));
  await p.close();
  assert.equal(p.metrics.rowsWritten, 3);
  for (const t of rows) await assertStored({ ...t, attempts: t.attempts ?? null });
});

test('a batch is written when it reaches batch_size, the remainder waits for its age', async () => {
  const p = pipeline({ batch_size: 10, batch_age_ms: 60_000 });
  p.start();
  for (let i = 0; i < 25; i++) p.record(sampleTrace({ organization_id: 'org_size' }));
  await waitFor(() => p.metrics.rowsWritten === 20, 5000, 'two full batches');
  await new Promise((r) => setTimeout(r, 300));
  assert.equal((await countRows(pool, 'organization_id = $1', ['org_size'])).rows, 20);
  assert.equal(p.metrics.bufferDepth, 5);
  await p.close();
  assert.equal((await countRows(pool, 'organization_id = $1', ['org_size'])).rows, 25, 'close() flushes the partial batch');
});

test('a partial batch is written once it is batch_age_ms old', async () => {
  const p = pipeline({ batch_size: 1000, batch_age_ms: 150 });
  p.start();
  const started = Date.now();
  for (let i = 0; i < 3; i++) p.record(sampleTrace({ organization_id: 'org_age' }));
  await new Promise((r) => setTimeout(r, 50));
  assert.equal((await countRows(pool, 'organization_id = $1', ['org_age'])).rows, 0, 'not before its age');
  await waitFor(async () => (await countRows(pool, 'organization_id = $1', ['org_age'])).rows === 3, 2000, 'age flush');
  assert.ok(Date.now() - started < 1000, 'readable within 1 s');
  await p.close();
});

test('payloads are archived compressed and fetched back', async () => {
  const p = pipeline();
  p.start();
  const payload = { request: { model: 'gpt', messages: [{ role: 'user', content: 'hi [REDACTED]' }] }, response: { choices: [{ text: 'x'.repeat(5000) }] } };
  const t = sampleTrace({ payload: payloadText(payload) });
  const plain = sampleTrace();
  p.record(t);
  p.record(plain);
  await p.close();
  assert.deepEqual(await fetchPayload(pool, t.request_id), payload);
  assert.equal(await fetchPayload(pool, plain.request_id), undefined);
  const size = await pool.query('SELECT octet_length(body) AS n FROM trace_payloads WHERE request_id = $1', [t.request_id]);
  assert.ok(size.rows[0].n < 1000, `stored compressed (${size.rows[0].n} bytes)`);
  const flag = await pool.query('SELECT has_payload FROM traces WHERE request_id = $1', [t.request_id]);
  assert.equal(flag.rows[0].has_payload, true);
});

test('a request_id recorded twice yields one row, and the rest of its batch is kept', async () => {
  const p = pipeline({ batch_size: 5, batch_age_ms: 20 });
  p.start();
  const t = sampleTrace({ organization_id: 'org_dup' });
  p.record(t);
  await waitFor(() => p.metrics.rowsWritten === 1, 2000, 'first write');
  p.record(t);
  for (let i = 0; i < 4; i++) p.record(sampleTrace({ organization_id: 'org_dup' }));
  await p.close();
  assert.deepEqual(await countRows(pool, 'organization_id = $1', ['org_dup']), { rows: 5, distinct: 5 });
  assert.equal(p.metrics.duplicatesSkipped, 1);
});

test('traces without an organisation are counted, not written', async () => {
  const p = pipeline();
  p.start();
  p.record(sampleTrace({ organization_id: '', request_id: 'req_unauth' }));
  await p.close();
  assert.equal(p.metrics.unattributed, 1);
  assert.equal((await countRows(pool, 'request_id = $1', ['req_unauth'])).rows, 0);
});

test('rows for a day without a partition create it; retention drops old days', async () => {
  // Retention long enough that the pipeline's own maintenance keeps 2020; the explicit call below drops it.
  const p = pipeline({ retention_days: 3650 });
  p.start();
  const old = sampleTrace({ organization_id: 'org_old', created_at: Date.parse('2020-01-15T12:00:00Z'), payload: payloadText({ request: 1, response: 2 }) });
  p.record(old);
  await p.close();
  assert.equal((await countRows(pool, 'organization_id = $1', ['org_old'])).rows, 1);
  const dropped = await new PartitionKeeper().maintain(pool, 30);
  assert.ok(dropped >= 2, 'the 2020 partitions of both tables');
  assert.equal((await countRows(pool, 'organization_id = $1', ['org_old'])).rows, 0);
  assert.equal(await fetchPayload(pool, old.request_id), undefined);
  const parts = await pool.query("SELECT count(*)::int AS n FROM pg_tables WHERE tablename LIKE 'traces_p%'");
  assert.ok(parts.rows[0].n >= 4, 'yesterday to two days ahead remain');
});

test('a payload JSON cannot encode is archived as an error note, and does not hold up its batch', async () => {
  // Made as the request ends: a BigInt, or nesting deeper than JSON.stringify's stack.
  const deep = JSON.parse(`${'['.repeat(20000)}${']'.repeat(20000)}`) as unknown;
  for (const request of [{ n: 1n }, deep]) assert.match(String(JSON.parse(payloadText({ request, response: null })).error), /not serialisable/);
  const p = pipeline();
  p.start();
  const t = sampleTrace({ organization_id: 'org_bigint', payload: payloadText({ request: { n: 1n }, response: null }) });
  p.record(t);
  p.record(sampleTrace({ organization_id: 'org_bigint' }));
  await p.close();
  assert.equal((await countRows(pool, 'organization_id = $1', ['org_bigint'])).rows, 2);
  assert.match(String((await fetchPayload(pool, t.request_id) as { error?: string }).error), /not serialisable/);
  assert.equal(p.metrics.rowsSpooled, 0);
});

test('a spool written when payloads were objects still archives them', async () => {
  const payload = { request: { a: [1, 2] }, response: { b: 'x' } };
  assert.deepEqual(JSON.parse(gunzipSync(await compressPayload(payload)).toString('utf8')), payload);
});

test('a connection killed mid-COPY fails that batch, and never the process', async () => {
  // Hold the table so the writer's COPY waits on the lock, checked out from the pool, then kill its backend.
  const locker = await pool.connect();
  await locker.query('BEGIN');
  await locker.query('LOCK TABLE traces IN ACCESS EXCLUSIVE MODE');
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => { uncaught.push(err); };
  // node:test reports an uncaught exception against the running test; this listener also records it as a plain failure.
  process.on('uncaughtException', onUncaught);
  try {
    const write = writeBatch(pool, new PartitionKeeper(), [sampleTrace({ organization_id: 'org_killed' })], false);
    const outcome = write.then(() => 'written', (err: Error) => err.message);
    await waitFor(async () => (await pool.query(
      "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'COPY traces%'")).rowCount === 1, 5000, 'the COPY waits on the lock');
    await pool.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'COPY traces%'");
    assert.match(await outcome, /terminat/i);
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(uncaught, [], 'the dead connection raised nothing outside the write');
  } finally {
    process.off('uncaughtException', onUncaught);
    await locker.query('ROLLBACK');
    locker.release();
  }
  // The pool recovers: the next batch is written.
  await writeBatch(pool, new PartitionKeeper(), [sampleTrace({ organization_id: 'org_killed' })], false);
  assert.equal((await countRows(pool, 'organization_id = $1', ['org_killed'])).rows, 1);
});
