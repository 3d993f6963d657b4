// Every request to the model API that shows a valid key has one trace row,
// whatever its answer: the model listings, the stored responses, a path or
// method no route takes, and a request turned away while the gateway drains.
// Management, operational and console requests write none, nor does a key
// that is not valid.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request as httpRequest } from 'node:http';
import pg from 'pg';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import { HTTP_KINDS, startGateway, type TestGateway } from './helpers/gateway.js';
import { oneUpstreamConfig, UPSTREAM_KEY_ENV } from './helpers/fixtures.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

describe('a trace for every model-API request', () => {
  let mock: OpenAIMock;
  let gw: TestGateway;
  let key: string;

  before(async () => {
    mock = await startOpenAIMock();
    gw = await startGateway({ env: { [UPSTREAM_KEY_ENV]: OPENAI_MOCK_KEY }, config: oneUpstreamConfig(mock.url) });
    key = await gw.key('acme');
  });
  after(async () => { await gw.close(); await mock.close(); });

  const call = (method: string, path: string, auth = key) => fetch(`${gw.url}${path}`, {
    method, headers: { authorization: `Bearer ${auth}`, 'content-type': 'application/json' },
    body: method === 'POST' || method === 'PUT' ? '{}' : undefined,
  });

  for (const [method, path, status, endpoint, code] of [
    ['GET', '/v1/models', 200, 'models', null],
    ['GET', '/v1/models/up-model', 200, 'models', null],
    ['GET', '/v1/models/no-such-model', 404, 'models', 'model_not_found'],
    ['GET', '/v1/responses/resp_nope', 404, 'stored_responses', 'not_found'],
    ['GET', '/v1/responses/resp_nope/input_items', 404, 'stored_responses', 'not_found'],
    ['DELETE', '/v1/responses/resp_nope', 404, 'stored_responses', 'not_found'],
    ['POST', '/v1/chat/completion', 404, 'other', 'route_not_found'],
    ['GET', '/v1/chat/completions', 405, 'other', 'method_not_allowed'],
    ['PURGE', '/v1/models', 501, 'other', 'method_not_implemented'],
  ] as const) {
    test(`${method} ${path}: ${status}, traced as ${endpoint}`, async () => {
      const res = await call(method, path);
      await res.arrayBuffer();
      assert.equal(res.status, status);
      const t = await gw.traces.waitFor(res.headers.get('x-request-id')!);
      assert.deepEqual([t.endpoint, t.status_code, t.error_code, t.organization_id, t.streamed], [endpoint, status, code, 'acme', false]);
    });
  }

  test('management, operational and console requests, and a refused request with a key that is not valid, write none', async () => {
    const before = gw.traces.rows.length;
    const ids: string[] = [];
    for (const [method, path, auth] of [
      ['GET', '/v1/api-keys', key], ['GET', '/v1/traces', key], ['GET', '/healthz', key], ['GET', '/metrics', key],
      ['GET', '/nope', key], ['POST', '/v1/chat/completion', 'sk-sluice-bogus'], ['GET', '/v1/chat/completions', 'sk-sluice-bogus'],
    ] as const) {
      const res = await call(method, path, auth);
      await res.arrayBuffer();
      if (path === '/v1/chat/completion') assert.equal(res.status, 404, 'a key that is not valid does not change the refusal');
      ids.push(res.headers.get('x-request-id') ?? '');
    }
    // A request that is traced, made last: once its row is in, every earlier one would be too.
    const last = await call('GET', '/v1/models');
    await last.arrayBuffer();
    await gw.traces.waitFor(last.headers.get('x-request-id')!);
    assert.equal(gw.traces.rows.length, before + 1, gw.traces.rows.slice(before).map((r) => r.endpoint).join());
  });
});

describe('usage counts model calls only', () => {
  test('a listing and a refused path are traced but are not requests in the rollups', async () => {
    const gw = await startGateway({ realTraces: true, config: { traces: { batch_age_ms: 20 }, organizations: [{ id: 'acme', models: ['mock-echo'] }] } });
    try {
      const key = await gw.key('acme');
      const ids: string[] = [];
      for (const [method, path] of [['GET', '/v1/models'], ['POST', '/v1/chat/completion'], ['POST', '/v1/chat/completions']]) {
        const res = await fetch(`${gw.url}${path}`, {
          method, headers: { authorization: `Bearer ${key}` },
          body: method === 'POST' ? JSON.stringify({ model: 'mock-echo', messages: [{ role: 'user', content: 'hi' }] }) : undefined,
        });
        await res.arrayBuffer();
        ids.push(res.headers.get('x-request-id')!);
      }
      const pool = gw.app.services.pool;
      const deadline = Date.now() + 3_000;
      let rows: Array<{ endpoint: string }> = [];
      while (rows.length < 3 && Date.now() < deadline) {
        rows = (await pool.query('SELECT endpoint FROM traces WHERE request_id = ANY($1) ORDER BY endpoint', [ids])).rows;
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.deepEqual(rows.map((r) => r.endpoint), ['chat', 'models', 'other']);
      const usage = await pool.query(`SELECT sum(requests)::int AS n FROM usage_day WHERE organization_id = 'acme' AND dim = ''`);
      assert.equal(usage.rows[0].n, 1);
    } finally {
      await gw.close();
    }
  });
});

/** A GET on a kept-alive connection, with the caller's key. */
function keptAlive(url: string, path: string, key: string, agent: Agent): Promise<{ status: number; id: string; body: string }> {
  const u = new URL(url);
  return new Promise((ok, fail) => {
    const req = httpRequest({ host: u.hostname, port: u.port, path, agent, headers: { authorization: `Bearer ${key}` } }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => { body += c; }).on('end', () => ok({ status: res.statusCode!, id: String(res.headers['x-request-id']), body }));
    });
    req.on('error', fail);
    req.end();
  });
}

// uWS only: node's server.close() closes kept-alive connections that are idle, so no new request reaches it.
for (const http of HTTP_KINDS.filter((k) => k === 'uws')) {
  describe(`draining on ${http}`, () => {
    test('a request turned away with 503 shutting_down is traced under the endpoint it asked for', { timeout: 20_000 }, async () => {
      const mock = await startOpenAIMock();
      mock.fault = 'slow-chunks';
      mock.slowMs = 100;
      const gw = await startGateway({
        http, realTraces: true, env: { [UPSTREAM_KEY_ENV]: OPENAI_MOCK_KEY },
        config: { ...oneUpstreamConfig(mock.url), traces: { batch_age_ms: 20 } },
      });
      const key = await gw.key('acme');
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      try {
        assert.equal((await keptAlive(gw.url, '/v1/models', key, agent)).status, 200);
        const streaming = fetch(`${gw.url}/v1/chat/completions`, {
          method: 'POST', headers: { authorization: `Bearer ${key}` },
          body: JSON.stringify({ model: 'up-model', stream: true, messages: [{ role: 'user', content: 'a b c d e' }] }),
        }).then((r) => r.text());
        await new Promise((r) => setTimeout(r, 150));
        const closing = gw.app.close();
        const late = await keptAlive(gw.url, '/v1/models', key, agent);
        assert.equal(late.status, 503);
        assert.equal(JSON.parse(late.body).error.code, 'shutting_down');
        await streaming;
        await closing;
        const c = new pg.Client({ connectionString: gw.db.url });
        await c.connect();
        const { rows } = await c.query('SELECT endpoint, status_code, error_code FROM traces WHERE request_id = $1', [late.id]);
        await c.end();
        assert.deepEqual(rows, [{ endpoint: 'models', status_code: 503, error_code: 'shutting_down' }]);
      } finally {
        agent.destroy();
        await gw.db.drop();
        await mock.close();
      }
    });
  });
}
