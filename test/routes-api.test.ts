// /v1/routes through HTTP (spec 2.2, 3, 4.4, 8): create with defaults, get,
// full replace, partial update, delete, listing order/filter/limit, 400s that
// name the field, 409 on a duplicate name, 404s, and tenant isolation.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { OpenAIMock } from './mocks/openai-mock.js';
import { startGateway, type TestGateway } from './helpers/gateway.js';
import { startRoutingGateway } from './helpers/routing-gateway.js';
import { call, routingConfig } from './helpers/management.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

const pin = (name: string, extra: Record<string, unknown> = {}) => ({
  name, action_kind: 'pin', match: { requested_model: `m-${name}` }, action: { provider: 'up', model: 'up-cheap' }, ...extra,
});

describe('routes API', () => {
  let mock: OpenAIMock;
  let gw: TestGateway;
  let admin: string;
  let betaAdmin: string;
  const api = (method: string, path: string, body?: unknown, key = admin) => call(gw.url, key, method, path, body);

  before(async () => { ({ mock, gw, admin, betaAdmin } = await startRoutingGateway()); });
  after(async () => { await gw.close(); await mock.close(); });

  test('create is 201 with the document; priority 0 and enabled true by default', async () => {
    const r = await api('POST', '/v1/routes', pin('defaults'));
    assert.equal(r.status, 201);
    assert.match(r.body.id, /^route_/);
    assert.deepEqual(
      { ...r.body, id: undefined, created_at: undefined, updated_at: undefined },
      { id: undefined, name: 'defaults', priority: 0, enabled: true, action_kind: 'pin', match: { requested_model: 'm-defaults' },
        action: { provider: 'up', model: 'up-cheap' }, created_at: undefined, updated_at: undefined },
    );
    assert.match(r.body.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(r.body.created_at, r.body.updated_at);
    const got = await api('GET', `/v1/routes/${r.body.id}`);
    assert.equal(got.status, 200);
    assert.deepEqual(got.body, r.body);
  });

  test('an auto rule has the action {} (it may be omitted); a rule can be created disabled', async () => {
    const a = await api('POST', '/v1/routes', { name: 'auto-1', action_kind: 'auto', match: { requested_model: 'any' } });
    assert.equal(a.status, 201);
    assert.deepEqual(a.body.action, {});
    const b = await api('POST', '/v1/routes', { name: 'auto-2', action_kind: 'auto', match: { requested_model: 'any' }, action: {}, enabled: false, priority: -3 });
    assert.equal(b.status, 201);
    assert.equal(b.body.enabled, false);
    assert.equal(b.body.priority, -3);
  });

  test('invalid bodies are 400 invalid_request naming the field', async () => {
    const cases: Array<[unknown, string]> = [
      [{ ...pin('bad1'), action_kind: 'round-robin' }, 'action_kind'],
      [{ ...pin('bad2'), action: { model: 'up-cheap' } }, 'action.provider'],
      [{ ...pin('bad3'), action: { provider: 'up' } }, 'action.model'],
      [{ name: 'bad4', action_kind: 'pin', match: { requested_model: 'x' } }, 'action'],
      [{ ...pin('bad5'), match: { model: 'x' } }, 'match.model'],
      [{ ...pin('bad6'), match: { requested_model: 'x', user: 'u' } }, 'match.user'],
      [{ ...pin('bad7'), match: {} }, 'match.requested_model'],
      [{ ...pin('bad8'), match: 'x' }, 'match'],
      [{ ...pin('bad9'), priority: 'high' }, 'priority'],
      [{ ...pin('bad10'), priority: 1.5 }, 'priority'],
      [{ ...pin('bad11'), enabled: 'yes' }, 'enabled'],
      [{ ...pin('bad12'), name: '' }, 'name'],
      [{ ...pin('bad13'), name: 42 }, 'name'],
      [{ action_kind: 'pin', match: { requested_model: 'x' }, action: { provider: 'up', model: 'up-cheap' } }, 'name'],
      [{ name: 'bad15', action_kind: 'pin', action: { provider: 'up', model: 'up-cheap' } }, 'match'],
      [{ ...pin('bad16'), color: 'red' }, 'color'],
      [{ ...pin('bad17'), action: { provider: 'up', model: 'up-cheap', weight: 2 } }, 'action.weight'],
      [{ name: 'bad18', action_kind: 'auto', match: { requested_model: 'x' }, action: { provider: 'up' } }, 'action.provider'],
    ];
    for (const [body, param] of cases) {
      const r = await api('POST', '/v1/routes', body);
      assert.equal(r.status, 400, `${JSON.stringify(body)} -> ${r.text}`);
      assert.equal(r.body.error.code, 'invalid_request');
      assert.equal(r.body.error.param, param, JSON.stringify(body));
      assert.ok(r.body.error.message.includes(param), r.body.error.message);
    }
    assert.equal((await api('POST', '/v1/routes', '[1]')).status, 400);
    assert.equal((await api('POST', '/v1/routes', '{')).body.error.code, 'invalid_json');
    const list = await api('GET', '/v1/routes?limit=200');
    assert.ok(!list.body.data.some((r: any) => r.name.startsWith('bad')), 'nothing invalid was stored');
  });

  test('a duplicate name is 409 conflict, on create, replace and update', async () => {
    const first = await api('POST', '/v1/routes', pin('dup'));
    assert.equal(first.status, 201);
    const again = await api('POST', '/v1/routes', { ...pin('dup'), match: { requested_model: 'other' } });
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, 'conflict');
    assert.equal(again.body.error.param, 'name');
    const other = await api('POST', '/v1/routes', pin('dup-other'));
    assert.equal((await api('PUT', `/v1/routes/${other.body.id}`, pin('dup'))).status, 409);
    assert.equal((await api('PATCH', `/v1/routes/${other.body.id}`, { name: 'dup' })).status, 409);
    // Names are unique per organisation only.
    assert.equal((await api('POST', '/v1/routes', { ...pin('dup'), action: { provider: 'up', model: 'up-dear' } }, betaAdmin)).status, 201);
  });

  test('PUT replaces everything: omitted fields reset to defaults, updated_at is fresh', async () => {
    const c = await api('POST', '/v1/routes', pin('put-me', { priority: 9, enabled: false }));
    await new Promise((ok) => setTimeout(ok, 15));
    const r = await api('PUT', `/v1/routes/${c.body.id}`, { name: 'put-me-2', action_kind: 'auto', match: { requested_model: 'zz' } });
    assert.equal(r.status, 200);
    assert.equal(r.body.id, c.body.id);
    assert.equal(r.body.name, 'put-me-2');
    assert.equal(r.body.priority, 0, 'priority reset');
    assert.equal(r.body.enabled, true, 'enabled reset');
    assert.deepEqual(r.body.action, {});
    assert.deepEqual(r.body.match, { requested_model: 'zz' });
    assert.equal(r.body.created_at, c.body.created_at);
    assert.ok(Date.parse(r.body.updated_at) > Date.parse(c.body.updated_at), 'updated_at is fresh');
    // A GET document echoed back (with its read-only fields) is a valid PUT body.
    const echoed = await api('PUT', `/v1/routes/${c.body.id}`, { ...r.body, priority: 4 });
    assert.equal(echoed.status, 200);
    assert.equal(echoed.body.priority, 4);
    const invalid = await api('PUT', `/v1/routes/${c.body.id}`, { name: 'put-me-2', action_kind: 'pin', match: { requested_model: 'zz' } });
    assert.equal(invalid.status, 400);
    assert.equal(invalid.body.error.param, 'action');
    const missing = await api('PUT', '/v1/routes/route_missing', pin('ghost'));
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.code, 'not_found');
  });

  test('PATCH changes only the supplied fields', async () => {
    const c = await api('POST', '/v1/routes', pin('patch-me', { priority: 7 }));
    await new Promise((ok) => setTimeout(ok, 15));
    const r = await api('PATCH', `/v1/routes/${c.body.id}`, { enabled: false });
    assert.equal(r.status, 200);
    assert.deepEqual({ ...r.body, updated_at: undefined }, { ...c.body, enabled: false, updated_at: undefined });
    assert.ok(Date.parse(r.body.updated_at) > Date.parse(c.body.updated_at));
    const p = await api('PATCH', `/v1/routes/${c.body.id}`, { priority: 1 });
    assert.equal(p.body.priority, 1);
    assert.equal(p.body.enabled, false, 'the earlier change stays');
    const m = await api('PATCH', `/v1/routes/${c.body.id}`, { action: { provider: 'up', model: 'up-dear' } });
    assert.deepEqual(m.body.action, { provider: 'up', model: 'up-dear' });
    assert.deepEqual(m.body.match, { requested_model: 'm-patch-me' });
    const toAuto = await api('PATCH', `/v1/routes/${c.body.id}`, { action_kind: 'auto' });
    assert.equal(toAuto.status, 200);
    assert.deepEqual(toAuto.body.action, {}, 'a changed kind does not keep the old action');
    const toPin = await api('PATCH', `/v1/routes/${c.body.id}`, { action_kind: 'pin' });
    assert.equal(toPin.status, 400);
    assert.equal(toPin.body.error.param, 'action');
    for (const [body, param] of [[{ enabled: 'no' }, 'enabled'], [{ priority: null }, 'priority'], [{ match: { x: 1 } }, 'match.x'], [{ nope: 1 }, 'nope']] as const) {
      const bad = await api('PATCH', `/v1/routes/${c.body.id}`, body);
      assert.equal(bad.status, 400, JSON.stringify(body));
      assert.equal(bad.body.error.param, param);
    }
    assert.equal((await api('PATCH', '/v1/routes/route_missing', { enabled: true })).status, 404);
  });

  test('DELETE is 204 with an empty body and permanent', async () => {
    const c = await api('POST', '/v1/routes', pin('delete-me'));
    const d = await api('DELETE', `/v1/routes/${c.body.id}`);
    assert.equal(d.status, 204);
    assert.equal(d.text, '');
    assert.equal((await api('GET', `/v1/routes/${c.body.id}`)).status, 404);
    assert.equal((await api('DELETE', `/v1/routes/${c.body.id}`)).status, 404);
    const g = await api('GET', '/v1/routes/route_nope');
    assert.equal(g.status, 404);
    assert.equal(g.body.error.code, 'not_found');
  });

  test('tenant isolation: another organisation\'s rule ids are 404 and stay unchanged', async () => {
    const c = await api('POST', '/v1/routes', pin('mine'));
    for (const [method, body] of [['GET', undefined], ['PUT', pin('stolen')], ['PATCH', { enabled: false }], ['DELETE', undefined]] as const) {
      const r = await api(method, `/v1/routes/${c.body.id}`, body, betaAdmin);
      assert.equal(r.status, 404, method);
      assert.equal(r.body.error.code, 'not_found');
    }
    assert.deepEqual((await api('GET', `/v1/routes/${c.body.id}`)).body, c.body);
    const listB = await api('GET', '/v1/routes?limit=200', undefined, betaAdmin);
    assert.ok(!listB.body.data.some((r: any) => r.id === c.body.id));
  });
});

describe('routes listing', () => {
  let gw: TestGateway;
  let admin: string;
  const api = (method: string, path: string, body?: unknown) => call(gw.url, admin, method, path, body);

  before(async () => {
    gw = await startGateway({ config: routingConfig('http://127.0.0.1:9') });
    admin = await gw.key('acme', 'admin');
    // 55 rules with shuffled priorities; every fifth disabled.
    for (let i = 0; i < 55; i++) {
      const r = await api('POST', '/v1/routes', pin(`r${i}`, { priority: (i * 37) % 55, enabled: i % 5 !== 0 }));
      assert.equal(r.status, 201);
    }
  });
  after(() => gw.close());

  test('default limit is 50, sorted by priority descending, with has_more', async () => {
    const r = await api('GET', '/v1/routes');
    assert.equal(r.status, 200);
    assert.equal(r.body.object, 'list', 'a list, as the keys\' and the traces\' are');
    assert.equal(r.body.data.length, 50);
    assert.equal(r.body.has_more, true);
    const prios = r.body.data.map((x: any) => x.priority);
    assert.deepEqual(prios, [...prios].sort((a: number, b: number) => b - a));
    assert.equal(prios[0], 54);
  });

  test('limit up to 200; has_more false when everything fits', async () => {
    const r = await api('GET', '/v1/routes?limit=200');
    assert.equal(r.body.data.length, 55);
    assert.equal(r.body.has_more, false);
    const two = await api('GET', '/v1/routes?limit=2');
    assert.deepEqual(two.body.data.map((x: any) => x.priority), [54, 53]);
    assert.equal(two.body.has_more, true);
    for (const bad of ['0', '201', '-1', 'ten', '1.5']) {
      const b = await api('GET', `/v1/routes?limit=${bad}`);
      assert.equal(b.status, 400, bad);
      assert.equal(b.body.error.param, 'limit');
    }
  });

  test('the enabled filter works in both directions', async () => {
    const on = await api('GET', '/v1/routes?enabled=true&limit=200');
    const off = await api('GET', '/v1/routes?enabled=false&limit=200');
    assert.equal(on.body.data.length, 44);
    assert.equal(off.body.data.length, 11);
    assert.ok(on.body.data.every((x: any) => x.enabled === true));
    assert.ok(off.body.data.every((x: any) => x.enabled === false));
    const bad = await api('GET', '/v1/routes?enabled=yes');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.param, 'enabled');
  });
});

describe('routes API: action.fallbacks on pin rules', () => {
  let mock: OpenAIMock;
  let gw: TestGateway;
  let admin: string;
  const api = (method: string, path: string, body?: unknown) => call(gw.url, admin, method, path, body);
  const fb = [{ provider: 'up', model: 'up-dear' }, { provider: 'offline', model: 'off-model' }];

  before(async () => { ({ mock, gw, admin } = await startRoutingGateway()); });
  after(async () => { await gw.close(); await mock.close(); });

  test('stored and returned in order; an empty list is the same as none', async () => {
    const r = await api('POST', '/v1/routes', pin('fb1', { action: { provider: 'up', model: 'up-cheap', fallbacks: fb } }));
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(r.body.action, { provider: 'up', model: 'up-cheap', fallbacks: fb });
    assert.deepEqual((await api('GET', `/v1/routes/${r.body.id}`)).body.action, r.body.action);
    const empty = await api('POST', '/v1/routes', pin('fb2', { action: { provider: 'up', model: 'up-cheap', fallbacks: [] } }));
    assert.deepEqual(empty.body.action, { provider: 'up', model: 'up-cheap' });
  });

  test('invalid fallbacks are 400 naming the field', async () => {
    const cases: Array<[unknown, string]> = [
      [[{ provider: 'up', model: 'up-dear' }, { provider: 'up' }], 'action.fallbacks.1.model'],
      [[{ model: 'up-dear' }], 'action.fallbacks.0.provider'],
      [[{ provider: 'up', model: 'up-dear', weight: 1 }], 'action.fallbacks.0.weight'],
      [{ provider: 'up' }, 'action.fallbacks'],
      [Array.from({ length: 6 }, () => ({ provider: 'up', model: 'up-dear' })), 'action.fallbacks'],
    ];
    for (const [fallbacks, param] of cases) {
      const r = await api('POST', '/v1/routes', pin('fb-bad', { action: { provider: 'up', model: 'up-cheap', fallbacks } }));
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body.error.param, param, r.text);
    }
    const auto = await api('POST', '/v1/routes', { name: 'fb-auto', action_kind: 'auto', match: { requested_model: 'x' }, action: { fallbacks: fb } });
    assert.equal(auto.body.error.param, 'action.fallbacks', 'auto rules take the organisation\'s fallbacks, not their own');
  });

  test('PUT without fallbacks resets them; PATCH of another field keeps them', async () => {
    const r = await api('POST', '/v1/routes', pin('fb3', { action: { provider: 'up', model: 'up-cheap', fallbacks: fb } }));
    const patched = await api('PATCH', `/v1/routes/${r.body.id}`, { priority: 4 });
    assert.deepEqual(patched.body.action.fallbacks, fb);
    const put = await api('PUT', `/v1/routes/${r.body.id}`, pin('fb3'));
    assert.equal(put.status, 200);
    assert.deepEqual(put.body.action, { provider: 'up', model: 'up-cheap' });
  });
});
