// `sluice serve` with two gateway threads on one port: both threads serve,
// a revocation and a rule change made through one reach the other at once
// (the cache TTL and the rules poll are set to a minute, so only the threads'
// own propagation can explain it), every trace lands exactly once through the one
// writer, and SIGTERM lets the streams of every thread finish.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createKey } from '../src/store/api-keys-repo.js';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import { call, MGMT_UPSTREAM_ENV, routingConfig } from './helpers/management.js';
import { rawRequest } from './helpers/raw-http.js';
import { createTestDatabase, stopTestPostgres, type TestDatabase } from './helpers/pg.js';
import { spawnSluice, type SluiceProcess } from './helpers/sluice-process.js';

after(stopTestPostgres);

/** Each request on its own connection, so SO_REUSEPORT spreads them over the threads. */
const fresh = (url: string, key: string, path: string, body?: object, headers: Record<string, string> = {}) =>
  rawRequest(url, body ? 'POST' : 'GET', path, { authorization: `Bearer ${key}`, ...headers }, body ? JSON.stringify(body) : undefined);

const chat = (model: string) => ({ model, messages: [{ role: 'user', content: 'hi' }] });

describe('two gateway threads in one process', () => {
  let mock: OpenAIMock;
  let db: TestDatabase;
  let pool: pg.Pool;
  let dir: string;
  let gw: SluiceProcess;
  let admin: string;

  before(async () => {
    mock = await startOpenAIMock();
    db = await createTestDatabase();
    dir = mkdtempSync(join(tmpdir(), 'sluice-threads-'));
    const configFile = join(dir, 'sluice.yaml');
    writeFileSync(configFile, JSON.stringify(routingConfig(mock.url, {
      server: { threads: 2 },
      auth: { cache_ttl_ms: 60_000, last_used_flush_ms: 1_000 },
      redis: { rules_poll_ms: 60_000 },
    })));
    // No REDIS_URL: what reaches the other thread can only be the in-process propagation.
    gw = await spawnSluice(configFile, { DATABASE_URL: db.url, REDIS_URL: undefined, SLUICE_DATA_DIR: dir, [MGMT_UPSTREAM_ENV]: OPENAI_MOCK_KEY });
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
    admin = (await createKey(pool, 'acme', 'admin', 'admin')).key;
  });

  after(async () => {
    await gw.stop();
    await pool.end();
    await db.drop();
    await mock.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('both threads serve, and /metrics sums them', async () => {
    for (let i = 0; i < 40; i++) assert.equal((await fresh(gw.url, admin, '/v1/chat/completions', chat('up-cheap'))).status, 200);
    const text = (await fresh(gw.url, admin, '/metrics')).text;
    const served = [...text.matchAll(/^sluice_thread_requests_total\{thread="(\d)"\} (\d+)/gm)].map((m) => Number(m[2]));
    assert.equal(served.length, 2, text);
    assert.ok(served.every((n) => n > 0), `each thread served some: ${served}`);
    const total = Number(/^sluice_requests_total\{endpoint="chat",status="200"\} (\d+)/m.exec(text)?.[1]);
    assert.equal(total, 40, 'the counters of both threads are summed');
  });

  test('a revocation made through one thread is refused by every thread at once', async () => {
    const created = await call(gw.url, admin, 'POST', '/v1/api-keys', { name: 'doomed' });
    const key = created.body.key as string;
    // Warm both threads' caches: with a 60 s TTL, a stale entry would keep answering 200.
    for (let i = 0; i < 20; i++) assert.equal((await fresh(gw.url, key, '/v1/models')).status, 200);
    assert.equal((await call(gw.url, admin, 'DELETE', `/v1/api-keys/${created.body.id}`)).status, 204);
    const after = await Promise.all(Array.from({ length: 20 }, () => fresh(gw.url, key, '/v1/models')));
    assert.deepEqual([...new Set(after.map((r) => r.status))], [401]);
  });

  test('a rule created through one thread routes on every thread at once', async () => {
    assert.equal((await fresh(gw.url, admin, '/v1/chat/completions', chat('brand-new'))).status, 404);
    for (let i = 0; i < 20; i++) await fresh(gw.url, admin, '/v1/chat/completions', chat('brand-new'));
    const rule = await call(gw.url, admin, 'POST', '/v1/routes', { name: 'fresh', action_kind: 'pin', match: { requested_model: 'brand-new' }, action: { provider: 'up', model: 'up-cheap' } });
    assert.equal(rule.status, 201);
    const after = await Promise.all(Array.from({ length: 20 }, () => fresh(gw.url, admin, '/v1/chat/completions', chat('brand-new'), { 'gateway-trace': 'true' })));
    assert.deepEqual([...new Set(after.map((r) => r.status))], [200]);
    assert.ok(after.every((r) => r.body.gateway.route_reason === 'rule:fresh'));
  });

  test('SIGTERM lets every thread finish its streams, and every trace lands exactly once', async () => {
    mock.fault = 'slow-chunks';
    mock.slowMs = 40;
    const streams = Array.from({ length: 8 }, () => fresh(gw.url, admin, '/v1/chat/completions', {
      ...chat('up-cheap'), stream: true, messages: [{ role: 'user', content: 'one two three four five six' }],
    }));
    await new Promise((ok) => setTimeout(ok, 60));
    const exited = new Promise<number | null>((ok) => gw.child.once('exit', (code) => ok(code)));
    gw.child.kill('SIGTERM');
    const done = await Promise.all(streams);
    for (const r of done) {
      assert.equal(r.status, 200);
      assert.ok(r.text.trimEnd().endsWith('data: [DONE]'), 'the stream finished');
    }
    assert.equal(await exited, 0);
    mock.fault = 'none';
    const rows = await pool.query<{ n: string; ids: string }>('SELECT count(*) AS n, count(DISTINCT request_id) AS ids FROM traces');
    // Every chat of this suite, from both threads: 40, then 1 + 20 + 20 around the rule, then the 8 streams.
    assert.equal(Number(rows.rows[0]!.ids), 89, 'every request traced');
    assert.equal(Number(rows.rows[0]!.n), 89, 'none twice');
  });
});
