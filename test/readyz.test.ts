// GET /readyz and GET /healthz: unauthenticated, cheap, and leaking nothing.
// Readiness follows Postgres (here a dedicated one that the test stops and
// starts), the applied migrations and the policy workers; liveness does no I/O.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import pg from 'pg';
import { startApp, type App } from '../src/app.js';
import { buildConfig } from '../src/config/load-config.js';
import { HTTP_KINDS, startGateway, type TestGateway } from './helpers/gateway.js';
import { stopTestPostgres } from './helpers/pg.js';
import { startRestartablePostgres, type RestartablePostgres } from './helpers/restartable-postgres.js';
import { within } from './helpers/sluice-process.js';

after(stopTestPostgres);

const probe = async (url: string, path = '/readyz') => {
  const r = await fetch(`${url}${path}`);
  return { status: r.status, type: r.headers.get('content-type'), body: await r.json() as any, text: '' };
};

for (const http of HTTP_KINDS) {
  describe(`readiness and liveness on a healthy gateway: ${http}`, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startGateway({ http, config: { organizations: [{ id: 'acme', models: ['mock-echo'], policy: {} }], policy: { workers: 1 } } });
    });
    after(() => gw.close());

    test('/readyz is 200 {"status":"ready"} without a key', async () => {
      const r = await probe(gw.url);
      assert.equal(r.status, 200);
      assert.equal(r.type, 'application/json');
      assert.deepEqual(r.body, { status: 'ready' });
    });

    test('/healthz stays a liveness probe', async () => {
      assert.deepEqual((await probe(gw.url, '/healthz')).body, { status: 'ok' });
    });

    test('a burst of probes costs at most one query per second', async () => {
      const pool = gw.app.services.pool;
      const original = pool.query.bind(pool);
      let queries = 0;
      (pool as any).query = (...args: any[]) => { queries++; return (original as any)(...args); };
      try {
        await new Promise((r) => setTimeout(r, 1_100));
        const answers = await Promise.all(Array.from({ length: 50 }, () => probe(gw.url)));
        assert.ok(answers.every((a) => a.status === 200));
        assert.ok(queries <= 1, `${queries} queries for 50 probes`);
      } finally {
        (pool as any).query = original;
      }
    });

    test('a missing migration makes it 503 naming the check; applying it makes it ready again', async () => {
      const c = new pg.Client({ connectionString: gw.db.url });
      await c.connect();
      try {
        const { rows } = await c.query<{ version: number; name: string }>('DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations) RETURNING version, name');
        await within(3_000, async () => (await probe(gw.url)).status === 503);
        assert.deepEqual((await probe(gw.url)).body, { status: 'not_ready', checks: { database: 'ok', migrations: 'pending', policy_workers: 'ok' } });
        await c.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [rows[0]!.version, rows[0]!.name]);
        await within(3_000, async () => (await probe(gw.url)).status === 200);
      } finally {
        await c.end();
      }
    });

    test('policy workers that are gone make it 503 (policy_workers)', async () => {
      await gw.app.services.policy!.close();
      await within(3_000, async () => (await probe(gw.url)).status === 503);
      const r = await probe(gw.url);
      assert.equal(r.body.checks.policy_workers, 'failing');
      assert.equal(r.body.checks.database, 'ok');
    });
  });
}

describe('readiness follows Postgres through an outage', () => {
  let server: RestartablePostgres;
  let app: App;
  let dataDir: string;
  before(async () => {
    server = await startRestartablePostgres();
    dataDir = mkdtempSync(join(tmpdir(), 'sluice-readyz-'));
    app = await startApp({
      config: buildConfig({ organizations: [{ id: 'acme', models: ['mock-echo'] }] }),
      databaseUrl: server.url, dataDir, host: '127.0.0.1', port: 0, logger: pino({ level: 'silent' }),
    });
  });
  after(async () => {
    await server.start().catch(() => {});
    await app?.close();
    await server.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('stopped Postgres: 503 naming the database and nothing internal; started again: 200', { timeout: 60_000 }, async () => {
    assert.equal((await probe(app.url)).status, 200);
    await server.stop();
    await within(5_000, async () => (await probe(app.url)).status === 503);
    const down = await fetch(`${app.url}/readyz`);
    const text = await down.text();
    assert.deepEqual(JSON.parse(text), { status: 'not_ready', checks: { database: 'failing', migrations: 'unknown' } });
    const port = new URL(server.url).port;
    for (const secret of [port, '127.0.0.1', 'ECONNREFUSED', 'postgres', 'password']) assert.ok(!text.includes(secret), `the body names ${secret}`);
    assert.equal((await probe(app.url, '/healthz')).status, 200, 'liveness does not depend on Postgres');
    await server.start();
    await within(10_000, async () => (await probe(app.url)).status === 200);
  });
});
