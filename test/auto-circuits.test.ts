// `auto` and circuit breakers, on two mock upstreams and with no fallbacks: the
// picker passes over a candidate whose circuit is open for the next one that
// fits; when every candidate's circuit is open it picks as before, so the answer
// is still the circuit-open 503; it reads a half-open circuit without taking its
// probe, and passes that candidate over only while the probe is out. A dry run
// still leaves circuits out.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import { sleep } from './mocks/mock-server.js';
import { startGateway, type TestGateway } from './helpers/gateway.js';
import { call, chatBody, MGMT_UPSTREAM_ENV, TWO_MODELS, twoProviders } from './helpers/management.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

// Long enough for the first two tests to run while the circuits they open stay open.
const OPEN_MS = 2_000;

describe('auto routes around open circuits', () => {
  let a: OpenAIMock;
  let b: OpenAIMock;
  let gw: TestGateway;
  let key: string;

  before(async () => {
    a = await startOpenAIMock();
    b = await startOpenAIMock();
    gw = await startGateway({
      config: {
        upstream: { circuit: { consecutive_failures: 2, open_ms: OPEN_MS } },
        providers: twoProviders(a, b, { max_attempts: 1 }, { max_attempts: 1 }),
        models: TWO_MODELS,
        organizations: [{ id: 'acme', models: ['a-model', 'b-model'] }],
      },
      env: { [MGMT_UPSTREAM_ENV]: OPENAI_MOCK_KEY },
    });
    key = await gw.key('acme', 'admin');
  });
  after(async () => { await gw.close(); await a.close(); await b.close(); });

  const ask = (model: string) => call(gw.url, key, 'POST', '/v1/chat/completions', chatBody(model), { 'gateway-trace': 'true' });
  const reset = () => { for (const m of [a, b]) { m.requests.length = 0; m.script.length = 0; } };
  /** Two failed calls in a row open the model's circuit. */
  const open = async (mock: OpenAIMock, model: string) => {
    for (let i = 0; i < 2; i++) { mock.script.push(503); assert.equal((await ask(model)).status, 502); }
  };

  test('the cheapest candidate\'s circuit open: auto is answered by the next', async () => {
    reset();
    assert.equal((await ask('auto')).body.model, 'a-model', 'all closed: the cheapest');
    await open(a, 'a-model');
    reset();
    const r = await ask('auto');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.model, 'b-model');
    assert.deepEqual([r.body.gateway.provider, r.body.gateway.model], ['pb', 'b-model']);
    assert.equal(r.body.gateway.attempts, undefined, 'picked, not skipped to: one clean attempt');
    assert.equal(a.requests.length, 0, 'the open upstream is not called');
    const trace = await gw.traces.waitFor(r.body.gateway.request_id);
    assert.deepEqual([trace.provider, trace.model, trace.route_reason], ['pb', 'b-model', 'default']);
    assert.ok(!trace.fallback_from && !trace.attempts);
    // A dry run leaves circuits out, as the README says, and its candidates keep their shape.
    const plan = await call(gw.url, key, 'POST', '/v1/chat/completions', chatBody('auto'), { 'gateway-dry-run': 'true' });
    assert.equal(plan.body.model, 'a-model');
    assert.deepEqual(plan.body.candidates.map((c: object) => Object.keys(c)), [
      ['provider', 'model', 'estimated_cost_usd', 'fits', 'configured'], ['provider', 'model', 'estimated_cost_usd', 'fits', 'configured'],
    ]);
  });

  test('every candidate\'s circuit open: the circuit-open 503, as before', async () => {
    reset();
    assert.equal((await ask('auto')).body.model, 'b-model', 'with only the cheapest open, the next answers');
    await open(b, 'b-model');
    reset();
    const r = await ask('auto');
    assert.equal(r.status, 503, r.text);
    assert.equal(r.body.error.code, 'upstream_unavailable');
    const trace = await gw.traces.waitFor(r.headers.get('x-request-id')!);
    assert.deepEqual(trace.attempts?.map((x) => [x.provider, x.model, x.status]), [['pa', 'a-model', 503]], 'the cheapest, skipped');
    assert.equal(a.requests.length + b.requests.length, 0);
  });

  test('half-open: the picker reads the circuit without taking its probe, and passes it over while the probe is out', async () => {
    await sleep(OPEN_MS + 50);
    reset();
    // Both circuits let one probe through now. A slow failing probe on the cheapest:
    a.script.push({ status: 503, delayMs: 500 });
    const probe = ask('auto');
    for (let i = 0; i < 200 && a.requests.length === 0; i++) await sleep(5);
    assert.equal(a.requests.length, 1, 'the call auto picked drew the probe: the picker left it there');
    const during = await ask('auto');
    assert.equal(during.status, 200, during.text);
    assert.equal(during.body.model, 'b-model', 'pa\'s probe is out: pb, half-open too, takes the request as its probe');
    const p = await probe;
    assert.equal(p.status, 502, p.text);
    assert.equal(a.requests.length, 1, 'one attempt for a probe');
    const next = await ask('auto');
    assert.equal(next.body.model, 'b-model', 'pa re-opened by its probe, pb closed by its own');
    assert.equal(a.requests.length, 1);
  });
});
