// Routing rules applied to chat requests, through HTTP (spec 1.2, 2.2, 3, 4.1):
// priority order, first enabled match wins, pin and auto, route_reason in the
// gateway block and the trace, explicit ids bypass rules, bad pins are a 409 at
// request time, rules are per organisation, and a dry run never reaches the upstream.
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { OpenAIMock } from './mocks/openai-mock.js';
import type { TestGateway } from './helpers/gateway.js';
import { startRoutingGateway } from './helpers/routing-gateway.js';
import { call, chatBody } from './helpers/management.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

describe('routing rules', () => {
  let mock: OpenAIMock;
  let gw: TestGateway;
  let admin: string;
  let betaAdmin: string;
  const api = (method: string, path: string, body?: unknown, key = admin) => call(gw.url, key, method, path, body);
  const dry = (model: string, key = admin) => call(gw.url, key, 'POST', '/v1/chat/completions', chatBody(model), { 'gateway-dry-run': 'true' });
  const rule = async (name: string, requested: string, action: Record<string, unknown> | 'auto', extra: Record<string, unknown> = {}) => {
    const body = action === 'auto'
      ? { name, action_kind: 'auto', match: { requested_model: requested }, ...extra }
      : { name, action_kind: 'pin', match: { requested_model: requested }, action, ...extra };
    const r = await api('POST', '/v1/routes', body);
    assert.equal(r.status, 201, r.text);
    return r.body as { id: string };
  };
  const UP_CHEAP = { provider: 'up', model: 'up-cheap' };
  const UP_DEAR = { provider: 'up', model: 'up-dear' };

  before(async () => { ({ mock, gw, admin, betaAdmin } = await startRoutingGateway()); });
  after(async () => { await gw.close(); await mock.close(); });
  beforeEach(async () => {
    for (const key of [admin, betaAdmin]) {
      const list = await api('GET', '/v1/routes?limit=200', undefined, key);
      for (const r of list.body.data) assert.equal((await api('DELETE', `/v1/routes/${r.id}`, undefined, key)).status, 204);
    }
  });

  test('without rules, aliases and auto resolve by default', async () => {
    const a = await dry('dear');
    assert.equal(a.status, 200);
    assert.equal(a.body.model, 'up-dear');
    assert.equal(a.body.route_reason, 'default');
    const auto = await dry('auto');
    assert.equal(auto.body.route_reason, 'default');
    assert.equal(auto.body.model, 'up-cheap', 'cheapest configured model');
    assert.equal((await dry('team-model')).status, 404, 'an unknown alias is model_not_found');
  });

  test('a pin rule routes the alias to its model; the upstream, the gateway block and the trace agree', async () => {
    await rule('team', 'team-model', UP_DEAR);
    const before = mock.requests.length;
    const r = await call(gw.url, admin, 'POST', '/v1/chat/completions', chatBody('team-model', 'pinned please'), { 'gateway-trace': 'true' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.model, 'up-dear');
    assert.equal(r.body.gateway.route_reason, 'rule:team');
    assert.equal(r.body.gateway.provider, 'up');
    assert.equal(mock.requests.length, before + 1);
    assert.equal(mock.requests.at(-1)!.body.model, 'up-dear');
    const trace = await gw.traces.waitFor(r.headers.get('x-request-id')!);
    assert.equal(trace.route_reason, 'rule:team');
    assert.equal(trace.requested_model, 'team-model');
    assert.equal(trace.model, 'up-dear');
  });

  test('highest priority first; among equal priorities the older rule; disabled rules are skipped', async () => {
    const low = await rule('low', 'x', UP_CHEAP, { priority: 1 });
    const high = await rule('high', 'x', UP_DEAR, { priority: 10 });
    assert.equal((await dry('x')).body.route_reason, 'rule:high');
    assert.equal((await api('PATCH', `/v1/routes/${high.id}`, { enabled: false })).status, 200);
    let r = await dry('x');
    assert.equal(r.body.route_reason, 'rule:low');
    assert.equal(r.body.model, 'up-cheap');
    assert.equal((await api('PATCH', `/v1/routes/${high.id}`, { enabled: true, priority: 1 })).status, 200);
    assert.equal((await dry('x')).body.route_reason, 'rule:low', 'equal priority: the older rule wins');
    assert.equal((await api('PATCH', `/v1/routes/${low.id}`, { priority: 0 })).status, 200);
    assert.equal((await dry('x')).body.route_reason, 'rule:high');
    assert.equal((await api('DELETE', `/v1/routes/${high.id}`)).status, 204);
    r = await dry('x');
    assert.equal(r.body.route_reason, 'rule:low', 'deletion applies to the next request');
  });

  test('a rule created disabled is staged: it applies only once enabled', async () => {
    const staged = await rule('staged', 'cheap', UP_DEAR, { enabled: false });
    assert.equal((await dry('cheap')).body.route_reason, 'default');
    await api('PATCH', `/v1/routes/${staged.id}`, { enabled: true });
    const r = await dry('cheap');
    assert.equal(r.body.route_reason, 'rule:staged', 'a rule may override a catalogue alias');
    assert.equal(r.body.model, 'up-dear');
  });

  test('an auto rule defers to the picker, which never picks an unconfigured model', async () => {
    await rule('smart-auto', 'smart', 'auto');
    const r = await dry('smart');
    assert.equal(r.status, 200);
    assert.equal(r.body.route_reason, 'rule:smart-auto');
    assert.equal(r.body.model, 'up-cheap');
    const off = r.body.candidates.find((c: any) => c.model === 'off-model');
    assert.deepEqual({ configured: off.configured, fits: off.fits }, { configured: false, fits: true });
    assert.ok(off.estimated_cost_usd < r.body.estimated_cost_usd, 'the unconfigured model was cheaper and still not picked');
    assert.equal(r.body.candidates.length, 3);
  });

  test('an explicit upstream model id bypasses every rule', async () => {
    await rule('hijack', 'up-dear', UP_CHEAP, { priority: 100 });
    const r = await dry('up-dear');
    assert.equal(r.body.model, 'up-dear');
    assert.equal(r.body.route_reason, 'default');
  });

  test('a pin to a model that cannot be used is 409 route_target_invalid at request time, never a fallback', async () => {
    const cases: Array<[string, Record<string, string>]> = [
      ['not-activated', { provider: 'openai', model: 'gpt-4o-mini' }],
      ['unconfigured', { provider: 'offline', model: 'off-model' }],
      ['unknown-provider', { provider: 'nope', model: 'up-cheap' }],
      ['wrong-provider', { provider: 'offline', model: 'up-cheap' }],
    ];
    const before = mock.requests.length;
    for (const [name, action] of cases) {
      await rule(name, `bad-${name}`, action);
      for (const headers of [{ 'gateway-dry-run': 'true' }, {}] as Array<Record<string, string>>) {
        const r = await call(gw.url, admin, 'POST', '/v1/chat/completions', chatBody(`bad-${name}`), headers);
        assert.equal(r.status, 409, `${name}: ${r.text}`);
        assert.equal(r.body.error.code, 'route_target_invalid');
        assert.ok(r.body.error.message.includes(name), r.body.error.message);
      }
    }
    assert.equal(mock.requests.length, before, 'nothing reached the upstream');
  });

  test('a pin the organisation has not activated goes to the rule\'s first activated fallback, as an unconfigured pin does', async () => {
    // It was a 409 whatever the rule's fallbacks, where the README promised them.
    await rule('unactivated-fb', 'ua-fb', { provider: 'openai', model: 'gpt-4o-mini', fallbacks: [{ provider: 'openai', model: 'gpt-4o' }, UP_CHEAP, UP_DEAR] });
    const plan = await dry('ua-fb');
    assert.equal(plan.status, 200, plan.text);
    assert.equal(plan.body.model, 'up-cheap', 'the dry run names the model that will answer');
    const r = await call(gw.url, admin, 'POST', '/v1/chat/completions', chatBody('ua-fb'), { 'gateway-trace': 'true' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.gateway.model, 'up-cheap');
    assert.equal(r.body.gateway.route_reason, 'rule:unactivated-fb');
    assert.equal(r.body.gateway.fallback_from, 'openai/gpt-4o-mini');
    assert.deepEqual(r.body.gateway.attempts.map((a: { provider: string; status: number }) => [a.provider, a.status]), [['openai', 409], ['up', 200]]);
  });

  test('rules belong to their organisation', async () => {
    await rule('acme-only', 'shared-alias', UP_CHEAP);
    assert.equal((await dry('shared-alias')).body.route_reason, 'rule:acme-only');
    const b = await dry('shared-alias', betaAdmin);
    assert.equal(b.status, 404);
    assert.equal(b.body.error.code, 'model_not_found');
    const br = await api('POST', '/v1/routes', { name: 'beta-rule', action_kind: 'pin', match: { requested_model: 'shared-alias' }, action: UP_DEAR }, betaAdmin);
    assert.equal(br.status, 201);
    assert.equal((await dry('shared-alias', betaAdmin)).body.route_reason, 'rule:beta-rule');
    assert.equal((await dry('shared-alias')).body.model, 'up-cheap', 'acme unchanged');
  });

  test('a dry run returns the resolution and the upstream receives nothing', async () => {
    await rule('dry', 'dry-model', UP_DEAR);
    const before = mock.requests.length;
    for (const body of [chatBody('dry-model', 'x'.repeat(400)), { ...chatBody('auto'), stream: true, max_tokens: 100 }]) {
      const r = await call(gw.url, admin, 'POST', '/v1/chat/completions', body, { 'gateway-dry-run': 'true' });
      assert.equal(r.status, 200);
      assert.match(r.headers.get('content-type')!, /application\/json/);
      assert.equal(r.body.object, 'route.resolution');
      assert.equal(r.body.requested_model, body.model);
      for (const k of ['provider', 'model', 'route_reason', 'candidates', 'estimated_prompt_tokens', 'estimated_cost_usd']) assert.ok(k in r.body, k);
      assert.ok(r.body.estimated_prompt_tokens > 0);
      assert.ok(r.body.estimated_cost_usd > 0);
    }
    await new Promise((ok) => setTimeout(ok, 100));
    assert.equal(mock.requests.length, before, 'no upstream request for a dry run');
    const off = await call(gw.url, admin, 'POST', '/v1/chat/completions', chatBody('dry-model'), { 'gateway-dry-run': 'false' });
    assert.equal(off.body.object, 'chat.completion', 'Gateway-Dry-Run: false calls the upstream');
    assert.equal(mock.requests.length, before + 1);
  });
});
