// The disk spool: framing, corruption handling, replay into Postgres without
// duplicates, buffer overflow spilling, and writes while Postgres is absent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { appendFileSync, readdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { countRows, sampleTrace, traceSettings, useTraceDatabase, waitFor } from './helpers/trace-fixtures.js';
import { TracePipeline } from '../src/traces/pipeline.js';
import { Spool, decodeSegment, encodeRecord } from '../src/traces/spool.js';
import type { TraceLogger } from '../src/traces/metrics.js';
import { encodeTraceRow } from '../src/traces/copy-encoder.js';

let pool: pg.Pool;
const traces = useTraceDatabase((p) => { pool = p; });

const tempDir = () => traces.tempDir('sluice-spool-');

function batch(org: string, n: number): ReturnType<typeof sampleTrace>[] {
  return Array.from({ length: n }, () => sampleTrace({ organization_id: org }));
}

function capturingLogger(): TraceLogger & { errors: object[] } {
  const errors: object[] = [];
  return { errors, info: () => {}, warn: () => {}, error: (obj) => { errors.push(obj); } };
}

test('records decode in order; a corrupt middle record is skipped, later ones kept', () => {
  const a = batch('o', 2); const b = batch('o', 3); const c = batch('o', 1);
  const bad = encodeRecord(b);
  bad.writeUInt8((bad.at(-1) ?? 0) ^ 0xff, bad.length - 1);
  const seg = decodeSegment('seg', Buffer.concat([encodeRecord(a), bad, encodeRecord(c)]));
  assert.deepEqual(seg.batches.map((x) => x.map((t) => t.request_id)), [a, c].map((x) => x.map((t) => t.request_id)));
  assert.deepEqual(seg.bad.map((x) => x.reason), ['checksum mismatch']);
});

test('a corrupt length in the middle: the records after it are found by their checksums, and the segment is kept as .bad', async () => {
  const dataDir = tempDir();
  const spoolDir = join(dataDir, 'trace-spool');
  const spool = new Spool(spoolDir, 'never', 1000);
  const batches = [batch('org_len', 3), batch('org_len', 4), batch('org_len', 5)];
  for (const b of batches) await spool.append(b);
  await spool.close();
  const [file] = readdirSync(spoolDir);
  const path = join(spoolDir, file ?? '');
  const data = readFileSync(path);
  // The second record's length now runs past the end: before, nothing after it was framed, and the third record was lost unreported.
  data.writeUInt32LE(0x00ffffff, encodeRecord(batches[0]!).length);
  writeFileSync(path, data);
  const seg = decodeSegment('seg', data);
  assert.deepEqual(seg.batches.map((x) => x.length), [3, 5]);
  assert.deepEqual(seg.bad.map((b) => [b.reason, b.torn]), [['truncated record', false]]);

  const p = new TracePipeline({ pool, settings: traceSettings(), dataDir, logger: capturingLogger() });
  p.start();
  await p.close();
  assert.deepEqual(await countRows(pool, 'organization_id = $1', ['org_len']), { rows: 8, distinct: 8 });
  assert.equal(p.metrics.badSpoolRecords, 1);
  assert.deepEqual(readdirSync(spoolDir), [`${file}.bad`], 'kept for inspection, and never replayed again');
});

test('records of a thousand rows: one corrupt record, body or length, first or not, loses only itself', () => {
  // Records as the default batch size makes them (about 400 KB): the search for the next record
  // crosses a large corrupt body full of false starts, and must still land on the next record.
  const batches = Array.from({ length: 20 }, () => batch('org_big', 1000));
  const records = batches.map((b) => encodeRecord(b));
  const at = (k: number) => records.slice(0, k).reduce((n, r) => n + r.length, 0);
  const cases: Array<[string, (d: Buffer) => void, number]> = [
    ['a body byte of record 1', (d) => { d[at(1) + 100]! ^= 0xff; }, 1],
    ['the length of record 1', (d) => { d.writeUInt32LE(0x7fffffff, at(1)); }, 1],
    ['the length of record 0', (d) => { d.writeUInt32LE(0x00ffffff, 0); }, 0],
  ];
  for (const [what, corrupt, lost] of cases) {
    const data = Buffer.concat(records);
    corrupt(data);
    const seg = decodeSegment('big', data);
    assert.deepEqual(seg.batches.map((b) => b[0]!.request_id), batches.filter((_, i) => i !== lost).map((b) => b[0]!.request_id), what);
    assert.equal(seg.bad.length, 1, what);
    assert.equal(seg.bad[0]!.torn, false, `${what}: corruption, not a crash's torn tail`);
  }
});

test('noise is read in bounded time: no record is framed, and nothing hangs', () => {
  const noise = Buffer.alloc(4 * 1024 * 1024);
  for (let i = 0; i < noise.length; i++) noise[i] = (i * 2654435761) >>> 24;
  const started = performance.now();
  const seg = decodeSegment('noise', noise);
  assert.equal(seg.batches.length, 0);
  assert.ok(seg.bad.length >= 1);
  assert.ok(performance.now() - started < 5_000, `${performance.now() - started} ms`);
});

test('a truncated last record: replay keeps the good records and reports the bad one', async () => {
  const dataDir = tempDir();
  const spoolDir = join(dataDir, 'trace-spool');
  const spool = new Spool(spoolDir, 'always', 1000);
  const good = [batch('org_trunc', 4), batch('org_trunc', 6)];
  for (const g of good) await spool.append(g);
  await spool.append(batch('org_trunc', 5));
  await spool.close();
  const [file] = readdirSync(spoolDir);
  assert.ok(file);
  const path = join(spoolDir, file);
  truncateSync(path, readFileSync(path).length - 7);

  const logger = capturingLogger();
  const p = new TracePipeline({ pool, settings: traceSettings(), dataDir, logger });
  p.start();
  await p.close();
  assert.deepEqual(await countRows(pool, 'organization_id = $1', ['org_trunc']), { rows: 10, distinct: 10 });
  assert.equal(p.metrics.rowsReplayed, 10);
  assert.equal(p.metrics.badSpoolRecords, 1);
  assert.equal(logger.errors.length, 1);
  assert.match(JSON.stringify(logger.errors[0]), /truncated record/);
  assert.deepEqual(readdirSync(spoolDir), [], 'the replayed segment is deleted: a torn tail is a crash\'s, not corruption');
});

test('replaying a segment twice (crash before delete) writes no duplicates', async () => {
  const dataDir = tempDir();
  const spoolDir = join(dataDir, 'trace-spool');
  const spool = new Spool(spoolDir, 'never', 1000);
  await spool.append(batch('org_twice', 8));
  await spool.close();
  const [file] = readdirSync(spoolDir);
  const copy = readFileSync(join(spoolDir, file ?? ''));
  for (let round = 0; round < 2; round++) {
    writeFileSync(join(spoolDir, file ?? ''), copy);
    const p = new TracePipeline({ pool, settings: traceSettings(), dataDir });
    await p.close();
    assert.equal(p.metrics.rowsReplayed + p.metrics.duplicatesSkipped, 8);
  }
  assert.deepEqual(await countRows(pool, 'organization_id = $1', ['org_twice']), { rows: 8, distinct: 8 });
});

test('a full buffer spills to the spool instead of dropping or blocking', async () => {
  const dataDir = tempDir();
  const p = new TracePipeline({ pool, settings: traceSettings({ buffer_capacity: 100, batch_size: 1000, batch_age_ms: 60_000 }), dataDir });
  p.start();
  const started = process.hrtime.bigint();
  for (let i = 0; i < 1050; i++) p.record(sampleTrace({ organization_id: 'org_spill' }));
  assert.ok(process.hrtime.bigint() - started < 50_000_000n, 'record() never waits on I/O');
  await waitFor(() => p.metrics.rowsSpooled === 1000, 5000, 'ten full buffers spooled');
  await p.close();
  assert.deepEqual(await countRows(pool, 'organization_id = $1', ['org_spill']), { rows: 1050, distinct: 1050 });
  assert.equal(p.metrics.rowsWritten + p.metrics.rowsReplayed, 1050);
});

test('with Postgres unreachable, close() leaves everything in the spool for the next start', async () => {
  const dataDir = tempDir();
  const dead = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/none', connectionTimeoutMillis: 500 });
  const p = new TracePipeline({ pool: dead, settings: traceSettings({ batch_age_ms: 10 }), dataDir });
  p.start();
  for (let i = 0; i < 30; i++) p.record(sampleTrace({ organization_id: 'org_later' }));
  await p.close();
  await dead.end();
  assert.equal(p.metrics.rowsSpooled, 30);
  // A record after close still lands in the spool.
  p.record(sampleTrace({ organization_id: 'org_later' }));
  assert.equal(p.metrics.rowsSpooled, 31);

  const next = new TracePipeline({ pool, settings: traceSettings(), dataDir });
  next.start();
  await next.close();
  assert.deepEqual(await countRows(pool, 'organization_id = $1', ['org_later']), { rows: 31, distinct: 31 });
});

test('rows that came as COPY lines are spooled as rows, and replay writes the same rows', async () => {
  const dataDir = tempDir();
  const rows = Array.from({ length: 20 }, (_, i) => sampleTrace({ organization_id: 'org_lines', model: `m\t${i}\\`, attempts: [{ provider: 'p', model: 'q\n', status: 503, latency_ms: 1.5 }] }));
  const dead = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/none', connectionTimeoutMillis: 500 });
  const p = new TracePipeline({ pool: dead, settings: traceSettings({ batch_age_ms: 10 }), dataDir });
  p.start();
  p.recordEncoded(rows.map(encodeTraceRow).join(''), rows.map((t) => t.created_at));
  await p.close();
  await dead.end();
  assert.equal(p.metrics.rowsSpooled, 20);
  const next = new TracePipeline({ pool, settings: traceSettings(), dataDir });
  next.start();
  await next.close();
  assert.equal(next.metrics.rowsReplayed, 20);
  const stored = await pool.query('SELECT request_id, model, attempts, created_at FROM traces WHERE organization_id = $1 ORDER BY request_id', ['org_lines']);
  const want = rows.map((t) => ({ request_id: t.request_id, model: t.model, attempts: t.attempts, created_at: new Date(t.created_at) }))
    .sort((a, b) => (a.request_id < b.request_id ? -1 : 1));
  assert.deepEqual(stored.rows, want);
});

test('garbage appended to a segment is reported, and the records before it survive', async () => {
  const dataDir = tempDir();
  const spoolDir = join(dataDir, 'trace-spool');
  const spool = new Spool(spoolDir, 'never', 1000);
  await spool.append(batch('org_garbage', 3));
  await spool.close();
  const [file] = readdirSync(spoolDir);
  appendFileSync(join(spoolDir, file ?? ''), Buffer.from([0xff, 0xff, 0xff, 0x7f, 1, 2, 3, 4, 5, 6, 7, 8, 9]));
  const p = new TracePipeline({ pool, settings: traceSettings(), dataDir });
  await p.close();
  assert.equal(p.metrics.badSpoolRecords, 1);
  assert.equal((await countRows(pool, 'organization_id = $1', ['org_garbage'])).rows, 3);
});

test('a full segment rolls over to the next; replay takes them oldest first', async () => {
  const dataDir = tempDir();
  const spoolDir = join(dataDir, 'trace-spool');
  const spool = new Spool(spoolDir, 'always', 1000, 2000);
  const batches = Array.from({ length: 6 }, () => batch('org_roll', 5));
  await Promise.all(batches.map((b) => spool.append(b)));
  await spool.close();
  const files = readdirSync(spoolDir).sort();
  assert.ok(files.length >= 3, `rolled over (${files.length} segments)`);
  const order = (await Promise.all(files.map((f) => spool.read(join(spoolDir, f))))).flatMap((c) => c.batches.flat().map((t) => t.request_id));
  assert.deepEqual(order, batches.flat().map((t) => t.request_id), 'records land in call order across segments');
  const p = new TracePipeline({ pool, settings: traceSettings(), dataDir });
  await p.close();
  assert.deepEqual(await countRows(pool, 'organization_id = $1', ['org_roll']), { rows: 30, distinct: 30 });
  assert.deepEqual(readdirSync(spoolDir), []);
});
