// /v1/api-keys through HTTP (spec 2.4, 4.4, 5): create shows the secret once,
// listings never do, revocation is permanent and immediate on this instance,
// only admin keys manage, and one organisation never sees another's keys.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { OpenAIMock } from './mocks/openai-mock.js';
import type { TestGateway } from './helpers/gateway.js';
import { startRoutingGateway } from './helpers/routing-gateway.js';
import { call } from './helpers/management.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

describe('API keys API', () => {
  let mock: OpenAIMock;
  let gw: TestGateway;
  let admin: string;
  let betaAdmin: string;
  const api = (key: string | undefined, method: string, path: string, body?: unknown) => call(gw.url, key, method, path, body);

  before(async () => { ({ mock, gw, admin, betaAdmin } = await startRoutingGateway()); });
  after(async () => { await gw.close(); await mock.close(); });

  test('create returns 201 with the secret once; the default role is user', async () => {
    const r = await api(admin, 'POST', '/v1/api-keys', { name: 'ci' });
    assert.equal(r.status, 201);
    assert.match(r.body.id, /^key_/);
    assert.equal(r.body.name, 'ci');
    assert.equal(r.body.role, 'user');
    assert.match(r.body.key, /^sk-sluice-/);
    assert.ok(r.body.key.startsWith(r.body.prefix), 'prefix is the leading part of the secret');
    assert.notEqual(r.body.id, r.body.prefix);
    assert.ok(!Number.isNaN(Date.parse(r.body.created_at)));
    // The new key calls model endpoints...
    assert.equal((await api(r.body.key, 'GET', '/v1/models')).status, 200);
    // ...but cannot manage: 403 forbidden, not 401.
    for (const [method, path] of [['GET', '/v1/api-keys'], ['POST', '/v1/api-keys'], ['DELETE', `/v1/api-keys/${r.body.id}`],
      ['GET', '/v1/routes'], ['POST', '/v1/routes'], ['GET', '/v1/routes/route_x'], ['PUT', '/v1/routes/route_x'],
      ['PATCH', '/v1/routes/route_x'], ['DELETE', '/v1/routes/route_x']] as const) {
      const f = await api(r.body.key, method, path, method === 'POST' || method === 'PUT' || method === 'PATCH' ? { name: 'x' } : undefined);
      assert.equal(f.status, 403, `${method} ${path}`);
      assert.equal(f.body.error.code, 'forbidden');
    }
  });

  test('an admin may create another admin key', async () => {
    const r = await api(admin, 'POST', '/v1/api-keys', { name: 'ops', role: 'admin' });
    assert.equal(r.status, 201);
    assert.equal(r.body.role, 'admin');
    assert.equal((await api(r.body.key, 'GET', '/v1/api-keys')).status, 200);
  });

  test('invalid create bodies are 400 naming the field', async () => {
    for (const [body, param] of [
      [{}, 'name'], [{ name: '' }, 'name'], [{ name: 7 }, 'name'], [{ name: 'x', role: 'owner' }, 'role'], [{ name: 'x', scopes: [] }, 'scopes'],
    ] as const) {
      const r = await api(admin, 'POST', '/v1/api-keys', body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.body.error.code, 'invalid_request');
      assert.equal(r.body.error.param, param);
    }
    const bad = await call(gw.url, admin, 'POST', '/v1/api-keys', '{"name":');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'invalid_json');
  });

  test('the listing holds no secret and shows last_used_at', async () => {
    const created = await api(admin, 'POST', '/v1/api-keys', { name: 'listed' });
    let list = await api(admin, 'GET', '/v1/api-keys');
    assert.equal(list.status, 200);
    assert.ok(Array.isArray(list.body.data));
    let entry = list.body.data.find((k: any) => k.id === created.body.id);
    assert.ok(entry, 'the new key is listed');
    assert.equal(entry.last_used_at, null, 'never used yet');
    assert.ok(!list.text.includes(created.body.key), 'no secret in the listing');
    for (const k of list.body.data) {
      assert.deepEqual(Object.keys(k).sort(), ['created_at', 'id', 'last_used_at', 'name', 'prefix', 'role']);
    }
    const before = Date.now();
    assert.equal((await api(created.body.key, 'GET', '/v1/models')).status, 200);
    await gw.app.services.auth.flush();
    list = await api(admin, 'GET', '/v1/api-keys');
    entry = list.body.data.find((k: any) => k.id === created.body.id);
    assert.ok(Date.parse(entry.last_used_at) >= before - 1_000, `last_used_at ${entry.last_used_at}`);
  });

  test('revocation is 204, permanent, and refuses the key at once', async () => {
    const created = await api(admin, 'POST', '/v1/api-keys', { name: 'doomed' });
    assert.equal((await api(created.body.key, 'GET', '/v1/models')).status, 200, 'cached in the LRU now');
    const del = await api(admin, 'DELETE', `/v1/api-keys/${created.body.id}`);
    assert.equal(del.status, 204);
    assert.equal(del.text, '');
    const refused = await api(created.body.key, 'GET', '/v1/models');
    assert.equal(refused.status, 401);
    assert.equal(refused.body.error.code, 'unauthorized');
    const list = await api(admin, 'GET', '/v1/api-keys');
    assert.ok(!list.body.data.some((k: any) => k.id === created.body.id), 'revoked keys are not listed');
    const again = await api(admin, 'DELETE', `/v1/api-keys/${created.body.id}`);
    assert.equal(again.status, 404);
    assert.equal(again.body.error.code, 'not_found');
    assert.equal((await api(admin, 'DELETE', `/v1/api-keys/${created.body.prefix}`)).status, 404, 'the prefix is not the id');
    assert.equal((await api(admin, 'DELETE', '/v1/api-keys/key_nope')).status, 404);
  });

  test('tenant isolation: another organisation\'s keys are invisible and untouchable', async () => {
    const a = await api(admin, 'POST', '/v1/api-keys', { name: 'acme-only' });
    const listB = await api(betaAdmin, 'GET', '/v1/api-keys');
    assert.equal(listB.status, 200);
    assert.ok(!listB.body.data.some((k: any) => k.id === a.body.id));
    assert.ok(listB.body.data.length >= 1);
    const del = await api(betaAdmin, 'DELETE', `/v1/api-keys/${a.body.id}`);
    assert.equal(del.status, 404);
    assert.equal(del.body.error.code, 'not_found');
    assert.equal((await api(a.body.key, 'GET', '/v1/models')).status, 200, 'still valid');
  });

  test('no key, a malformed key and an unknown key are 401', async () => {
    assert.equal((await api(undefined, 'GET', '/v1/api-keys')).status, 401);
    assert.equal((await call(gw.url, undefined, 'GET', '/v1/api-keys', undefined, { authorization: 'Basic abc' })).status, 401);
    assert.equal((await api('sk-sluice-nope', 'GET', '/v1/api-keys')).status, 401);
  });
});
