// Fallbacks and circuit breaking with two mock upstreams: a pin rule's
// fallbacks are tried in order (an unconfigured one skipped), an organisation's
// fallbacks back `auto` up, explicit model ids and a caller's own 400 never
// fall back, and the trace and gateway block say what happened. A circuit
// opens after consecutive failed calls: the upstream is then not called (fast
// 503, or straight to the fallback), the state shows in /metrics, and a
// half-open probe closes it again, or re-opens it when it fails; it also opens
// on a failure rate over a window (checked on a fake clock), and reading its
// state takes no probe. One deadline spans the whole request: a fallback gets
// only what is left of it, an attempt still running when it passes is cut
// short, and no retry wait outlives it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import { sleep } from './mocks/mock-server.js';
import { startGateway, type TestGateway } from './helpers/gateway.js';
import { call, chatBody, MGMT_UPSTREAM_ENV, TWO_MODELS, twoProviders, UNSET_ENV } from './helpers/management.js';
import { circuitSchema } from '../src/config/resilience-schema.js';
import { Circuit, Circuits, isOutage } from '../src/upstream/circuit.js';
import { GatewayError } from '../src/errors.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

const OPEN_MS = 600;
const retry = { max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10, deadline_ms: 2_000 };

describe('fallbacks and circuits', () => {
  let a: OpenAIMock;
  let b: OpenAIMock;
  let gw: TestGateway;
  let admin: string;

  before(async () => {
    a = await startOpenAIMock();
    b = await startOpenAIMock();
    gw = await startGateway({
      config: {
        auth: { cache_ttl_ms: 500 },
        upstream: { circuit: { consecutive_failures: 4, open_ms: OPEN_MS } },
        providers: {
          ...twoProviders(a, b, retry, retry),
          off: { kind: 'openai', base_url: 'http://127.0.0.1:9/v1', api_key_env: UNSET_ENV },
        },
        models: [
          ...TWO_MODELS,
          { id: 'c-model', provider: 'pb', context_window: 8_000, pricing: { prompt: 3, completion: 3 } },
          { id: 'off-model', provider: 'off', context_window: 8_000, pricing: { prompt: 0, completion: 0 } },
        ],
        organizations: [{
          id: 'acme', models: ['a-model', 'b-model', 'c-model', 'off-model'], auto_preference: ['a-model', 'b-model'],
          fallbacks: [{ provider: 'pb', model: 'b-model' }],
        }],
      },
      env: { [MGMT_UPSTREAM_ENV]: OPENAI_MOCK_KEY },
    });
    admin = await gw.key('acme', 'admin');
    const rule = await call(gw.url, admin, 'POST', '/v1/routes', {
      name: 'with-fallbacks', action_kind: 'pin', match: { requested_model: 'pinned' },
      action: { provider: 'pa', model: 'a-model', fallbacks: [{ provider: 'off', model: 'off-model' }, { provider: 'pb', model: 'c-model' }, { provider: 'pb', model: 'b-model' }] },
    });
    assert.equal(rule.status, 201, rule.text);
    const unconfigured = await call(gw.url, admin, 'POST', '/v1/routes', {
      name: 'dead-pin', action_kind: 'pin', match: { requested_model: 'dead' },
      action: { provider: 'off', model: 'off-model', fallbacks: [{ provider: 'pb', model: 'b-model' }] },
    });
    assert.equal(unconfigured.status, 201, unconfigured.text);
  });
  after(async () => { await gw.close(); await a.close(); await b.close(); });

  const reset = () => { for (const m of [a, b]) { m.requests.length = 0; m.script.length = 0; } };
  const ask = (model: string, stream = false) => call(gw.url, admin, 'POST', '/v1/chat/completions',
    { model, stream, messages: [{ role: 'user', content: 'hello there' }] }, { 'gateway-trace': 'true' });
  const circuitOf = async (provider: string) => {
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    const m = text.match(new RegExp(`sluice_upstream_circuit_state\\{provider="${provider}",origin="[^"]+"\\} (\\d)`));
    return m ? Number(m[1]) : undefined;
  };

  test('a pin rule\'s fallbacks are tried in order; an unconfigured one is skipped', async () => {
    reset();
    a.script.push(503, 503);
    const r = await ask('pinned');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.model, 'c-model');
    const g = r.body.gateway;
    assert.equal(g.provider, 'pb');
    assert.equal(g.model, 'c-model');
    assert.equal(g.route_reason, 'rule:with-fallbacks');
    assert.equal(g.fallback_from, 'pa/a-model');
    assert.deepEqual(g.attempts.map((x: any) => [x.provider, x.model, x.status]), [
      ['pa', 'a-model', 503], ['pa', 'a-model', 503], ['off', 'off-model', 409], ['pb', 'c-model', 200],
    ]);
    assert.equal(b.requests[0]!.body.model, 'c-model');
    const trace = await gw.traces.waitFor(g.request_id);
    assert.equal(trace.provider, 'pb');
    assert.equal(trace.model, 'c-model');
    assert.equal(trace.fallback_from, 'pa/a-model');
    assert.deepEqual(trace.attempts, g.attempts);
    // Priced at the model that answered.
    assert.ok(Math.abs(trace.cost_usd - (r.body.usage.prompt_tokens * 3 + r.body.usage.completion_tokens * 3) / 1e6) < 1e-12);
  });

  test('the same, streamed: the fallback is chosen before the first byte', async () => {
    reset();
    a.script.push(500, 500);
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'pinned', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.status, 200);
    const text = await res.text();
    assert.ok(text.includes('"model":"c-model"') && text.endsWith('data: [DONE]\n\n'), text);
  });

  test('a pin whose provider has no credential goes to its fallback', async () => {
    reset();
    const r = await ask('dead');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.gateway.model, 'b-model');
    assert.equal(r.body.gateway.fallback_from, 'off/off-model');
    // The dry run names the model that will answer, and its price (it named off-model, at no cost).
    const plan = await call(gw.url, admin, 'POST', '/v1/chat/completions', chatBody('dead'), { 'gateway-dry-run': 'true' });
    assert.deepEqual([plan.body.provider, plan.body.model, plan.body.route_reason], ['pb', 'b-model', 'rule:dead-pin']);
    assert.ok(plan.body.estimated_cost_usd > 0);
    const responsesPlan = await call(gw.url, admin, 'POST', '/v1/responses', { model: 'dead', input: 'hello' }, { 'gateway-dry-run': 'true' });
    assert.equal(responsesPlan.body.model, 'b-model', responsesPlan.text);
  });

  test('the organisation\'s fallbacks back up auto', async () => {
    reset();
    a.script.push(502, 502);
    const r = await ask('auto');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.gateway.model, 'b-model');
    assert.equal(r.body.gateway.route_reason, 'default');
    assert.equal(r.body.gateway.fallback_from, 'pa/a-model');
  });

  test('an explicit model id never falls back; nor does the caller\'s own 400', async () => {
    reset();
    // The three fallbacks above were three failed calls on pa in a row: one success resets the count.
    assert.equal((await ask('a-model')).status, 200);
    reset();
    a.script.push(503, 503);
    const r = await ask('a-model');
    assert.equal(r.status, 502);
    assert.equal(b.requests.length, 0);
    reset();
    a.script.push(400);
    const bad = await ask('pinned');
    assert.equal(bad.status, 400);
    assert.equal(b.requests.length, 0);
    assert.equal(a.requests.length, 1);
  });

  test('consecutive failed calls open the circuit: a fast 503, or straight to the fallback', async () => {
    reset();
    assert.equal((await ask('a-model')).status, 200, 'a success first: the failure count starts at zero');
    assert.equal(await circuitOf('pa'), 0);
    for (let i = 0; i < 4; i++) { a.script.push(503, 503); assert.equal((await ask('a-model')).status, 502); }
    assert.equal(await circuitOf('pa'), 2, 'open');
    reset();
    const t0 = performance.now();
    const fast = await ask('a-model');
    assert.equal(fast.status, 503);
    assert.equal(fast.body.error.code, 'upstream_unavailable');
    assert.ok(performance.now() - t0 < 200);
    assert.equal(a.requests.length, 0, 'the open upstream is not called');
    // A lone skipped target is not one clean attempt: the trace says what happened (it said nothing).
    const skipped = await gw.traces.waitFor(fast.headers.get('x-request-id')!);
    assert.deepEqual(skipped.attempts?.map((x) => [x.provider, x.status, x.latency_ms]), [['pa', 503, 0]]);
    // A pin's fallbacks (`auto` picks another candidate instead: auto-circuits.test.ts).
    const viaFallback = await ask('pinned');
    assert.equal(viaFallback.status, 200);
    assert.equal(viaFallback.body.gateway.model, 'c-model');
    assert.deepEqual(viaFallback.body.gateway.attempts.map((x: any) => [x.provider, x.status]), [['pa', 503], ['off', 409], ['pb', 200]]);
    assert.equal(a.requests.length, 0);
  });

  test('half-open: a failed probe re-opens; a good one closes', async () => {
    await sleep(OPEN_MS + 50);
    reset();
    a.script.push(500);
    assert.equal((await ask('a-model')).status, 502, 'the probe fails');
    assert.equal(a.requests.length, 1, 'a probe gets one attempt, no retries');
    assert.equal(await circuitOf('pa'), 2, 're-opened');
    assert.equal((await ask('a-model')).status, 503);
    await sleep(OPEN_MS + 50);
    const probe = await ask('a-model');
    assert.equal(probe.status, 200);
    assert.equal(await circuitOf('pa'), 0, 'closed again');
    assert.equal((await ask('a-model')).status, 200);
  });
});

describe('circuits are kept per provider and origin (pure)', () => {
  test('base URLs of one origin share a circuit; another origin or provider has its own', () => {
    const circuits = new Circuits(circuitSchema.parse({}));
    const a = circuits.get('pa', 'http://127.0.0.1:9/v1');
    assert.equal(circuits.get('pa', 'http://127.0.0.1:9/v1'), a, 'the same base URL again');
    assert.equal(circuits.get('pa', 'http://127.0.0.1:9/other/'), a, 'another path of the origin');
    assert.notEqual(circuits.get('pa', 'http://127.0.0.1:10/v1'), a, 'another port');
    assert.notEqual(circuits.get('pb', 'http://127.0.0.1:9/v1'), a, 'another provider');
    assert.deepEqual([...circuits.all.values()].map((c) => `${c.provider} ${c.origin}`),
      ['pa http://127.0.0.1:9', 'pa http://127.0.0.1:10', 'pb http://127.0.0.1:9'], 'one gauge series per provider and origin');
  });
});

describe('a circuit opens on its failure rate over a window (pure, on a fake clock)', () => {
  // Never two failures in a row below: only the rate can open these circuits.
  const policy = circuitSchema.parse({ consecutive_failures: 100, failure_rate: 0.5, min_requests: 4, window_ms: 1_000, open_ms: 500 });
  const OPEN = 2;

  test('at the rate, once the window has min_requests calls', () => {
    let now = 10_000;
    const c = new Circuit(policy, () => now);
    for (const failed of [false, true, false]) c.record(failed, 'call');
    assert.equal(c.state, 0, 'one failure in three calls: under min_requests, still closed');
    c.record(true, 'call');
    assert.equal(c.state, OPEN, 'two failures in four calls: 50%');
    assert.equal(c.allow(), undefined, 'open: refused');
    now += 500;
    assert.equal(c.allow(), 'probe', 'after open_ms, one probe');
    assert.equal(c.allow(), undefined, 'and only one');
    c.record(false, 'probe');
    assert.equal(c.state, 0, 'the probe succeeded: closed');
  });

  test('not below the rate, and a new window starts counting afresh', () => {
    let now = 10_000;
    const below = new Circuit(policy, () => now);
    for (const failed of [false, false, false, true, false, true, false]) below.record(failed, 'call');
    assert.equal(below.state, 0, 'two failures in seven calls');
    const rolled = new Circuit(policy, () => now);
    for (const failed of [true, false, true]) rolled.record(failed, 'call');
    now += 1_000;
    // Counted with the last window's, this would be 3 failures in 5 calls and open.
    for (const failed of [false, true]) rolled.record(failed, 'call');
    assert.equal(rolled.state, 0, 'one failure in the new window\'s two calls');
    for (const failed of [false, true]) rolled.record(failed, 'call');
    assert.equal(rolled.state, OPEN, 'two in its four');
  });

  test('once open, only the probe decides: a slow call let in before it opened closes nothing, and reopens nothing', () => {
    let now = 10_000;
    const c = new Circuit(policy, () => now);
    const slow = c.allow();
    assert.equal(slow, 'call');
    for (const failed of [true, true, true, true]) c.record(failed, c.allow()!);
    assert.equal(c.state, OPEN);
    // The slow call ends well: before, that closed the circuit without a probe, before open_ms.
    c.record(false, slow!);
    assert.equal(c.state, OPEN, 'still open');
    now += 500;
    const probe = c.allow();
    assert.equal(probe, 'probe');
    // A late failure of another old call does not re-open it under the probe, nor free a second probe.
    c.record(true, 'call');
    assert.equal(c.allow(), undefined, 'one probe at a time');
    c.record(false, probe!);
    assert.equal(c.state, 0, 'the probe decided');
  });

  test('refusing() only reads: asked any number of times, it never takes the half-open probe', () => {
    let now = 10_000;
    const c = new Circuit(policy, () => now);
    assert.equal(c.refusing(), false, 'closed');
    for (const failed of [false, true, false, true]) c.record(failed, 'call');
    assert.equal(c.refusing(), true, 'open');
    now += 500;
    for (let i = 0; i < 3; i++) assert.equal(c.refusing(), false, 'past open_ms the probe is free');
    const probe = c.allow();
    assert.equal(probe, 'probe', 'and still there for the call that takes it');
    assert.equal(c.refusing(), true, 'while it is out, the next call would be refused');
    c.record(false, probe!);
    assert.equal(c.refusing(), false, 'closed again');
  });

  test('every 5xx counts against the upstream, 529 and 501 too; a 429 or another 4xx does not', () => {
    const failure = (status: number) => new GatewayError('upstream_error', 'x', { upstreamStatus: status, status: status >= 500 ? 502 : status });
    for (const status of [500, 501, 502, 503, 504, 529]) assert.equal(isOutage(failure(status)), true, String(status));
    for (const status of [400, 404, 409, 422, 429]) assert.equal(isOutage(failure(status)), false, String(status));
  });
});

describe('one deadline for the whole request, fallbacks included', () => {
  const DEADLINE_MS = 600;
  let a: OpenAIMock;
  let b: OpenAIMock;
  let gw: TestGateway;
  let key: string;

  before(async () => {
    a = await startOpenAIMock();
    b = await startOpenAIMock();
    gw = await startGateway({
      config: {
        providers: twoProviders(a, b, { max_attempts: 1, deadline_ms: DEADLINE_MS }, { max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10, deadline_ms: DEADLINE_MS }),
        models: TWO_MODELS,
        organizations: [{ id: 'acme', models: ['a-model', 'b-model'], auto_preference: ['a-model', 'b-model'], fallbacks: [{ provider: 'pb', model: 'b-model' }] }],
      },
      env: { [MGMT_UPSTREAM_ENV]: OPENAI_MOCK_KEY },
    });
    key = await gw.key('acme');
  });
  after(async () => { await gw.close(); await a.close(); await b.close(); });

  const timed = async () => {
    const t0 = performance.now();
    const r = await call(gw.url, key, 'POST', '/v1/chat/completions', { model: 'auto', messages: [{ role: 'user', content: 'hello' }] });
    return { r, ms: performance.now() - t0, trace: await gw.traces.waitFor(r.headers.get('x-request-id')!) };
  };

  test('the fallback gets what is left of the deadline, and an attempt still running when it passes is cut short', async () => {
    // The primary fails after 400 ms; the fallback would take 2 s, far past the request's 600.
    a.script.push({ status: 503, delayMs: 400 });
    b.script.push({ status: 503, delayMs: 2_000 });
    const abortedBefore = b.aborted;
    const { r, ms, trace } = await timed();
    assert.equal(r.status, 504, r.text);
    assert.equal(r.body.error.code, 'upstream_timeout');
    assert.ok(ms >= DEADLINE_MS - 5 && ms < DEADLINE_MS + 300, `answered after ${Math.round(ms)} ms`);
    assert.deepEqual(trace.attempts!.map((x) => [x.provider, x.status]), [['pa', 503], ['pb', 504]]);
    await sleep(100);
    assert.equal(b.aborted - abortedBefore, 1, 'the running attempt\'s connection was closed');
    assert.equal(b.requests.length, 1, 'and not retried');
    b.script.length = 0;
  });

  test('no retry wait runs past the deadline, counted from the request\'s start, not the fallback\'s', async () => {
    a.requests.length = 0;
    b.requests.length = 0;
    // 400 ms on the primary, then a 300 ms retry-after on the fallback: 700 > 600, so the 429 comes back at once.
    a.script.push({ status: 503, delayMs: 400 });
    b.script.push({ status: 429, headers: { 'retry-after-ms': '300' } });
    const { r, ms, trace } = await timed();
    assert.equal(r.status, 429, r.text);
    assert.ok(ms < DEADLINE_MS, `answered after ${Math.round(ms)} ms`);
    assert.equal(b.requests.length, 1);
    assert.deepEqual(trace.attempts!.map((x) => [x.provider, x.status]), [['pa', 503], ['pb', 429]]);
  });

  test('a stream the upstream accepted runs past the deadline: it bounds the wait for the first byte, not the answer', async () => {
    a.fault = 'slow-chunks';
    a.slowMs = 100;
    try {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'auto', stream: true, messages: [{ role: 'user', content: 'one two three four five six seven eight nine' }] }),
      });
      const t0 = performance.now();
      const text = await res.text();
      assert.ok(performance.now() - t0 > DEADLINE_MS, 'the stream outlived the deadline');
      assert.ok(!text.includes('event: error') && text.endsWith('data: [DONE]\n\n'), text);
    } finally { a.fault = 'none'; }
  });
});

describe('the deadline does not wait for a pool slot', () => {
  const DEADLINE_MS = 400;
  let up: OpenAIMock;
  let gw: TestGateway;
  let key: string;

  before(async () => {
    up = await startOpenAIMock();
    gw = await startGateway({
      config: {
        upstream: { connections_per_origin: 1 },
        providers: { pa: { kind: 'openai', base_url: `${up.url}/v1`, api_key_env: MGMT_UPSTREAM_ENV, retry: { max_attempts: 1, deadline_ms: DEADLINE_MS } } },
        models: [{ id: 'a-model', provider: 'pa', context_window: 8_000, pricing: { prompt: 1, completion: 1 } }],
        organizations: [{ id: 'acme', models: ['a-model'] }],
      },
      env: { [MGMT_UPSTREAM_ENV]: OPENAI_MOCK_KEY },
    });
    key = await gw.key('acme');
  });
  after(async () => { await gw.close(); await up.close(); });

  test('a call queued behind the only connection gets its 504 at the deadline, and is never sent', async () => {
    // An accepted stream holds the origin's one connection well past the deadline; the second call waits in the origin's queue.
    up.fault = 'slow-chunks';
    up.slowMs = 150;
    try {
      const stream = fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'a-model', stream: true, messages: [{ role: 'user', content: 'one two three four five six seven eight nine' }] }),
      }).then((r) => r.text());
      await sleep(100);
      const t0 = performance.now();
      const queued = await call(gw.url, key, 'POST', '/v1/chat/completions', { model: 'a-model', messages: [{ role: 'user', content: 'hello' }] });
      const ms = performance.now() - t0;
      assert.equal(queued.status, 504, queued.text);
      assert.equal(queued.body.error.code, 'upstream_timeout');
      assert.ok(ms >= DEADLINE_MS - 60 && ms < DEADLINE_MS + 250, `answered after ${Math.round(ms)} ms`);
      assert.ok((await stream).endsWith('data: [DONE]\n\n'));
      await sleep(200);
      assert.equal(up.requests.length, 1, 'the queued call was dropped, not sent once the connection was free');
    } finally { up.fault = 'none'; }
  });
});

describe('after auto, a fallback the picker found too small is not tried', () => {
  let a: OpenAIMock;
  let b: OpenAIMock;
  let gw: TestGateway;
  before(async () => {
    a = await startOpenAIMock();
    b = await startOpenAIMock();
    gw = await startGateway({
      config: {
        providers: twoProviders(a, b, { max_attempts: 1 }, { max_attempts: 1 }),
        models: [
          { id: 'big', provider: 'pa', context_window: 8_000, pricing: { prompt: 1, completion: 1 } },
          { id: 'small', provider: 'pb', context_window: 200, pricing: { prompt: 0.1, completion: 0.1 } },
        ],
        organizations: [{ id: 'acme', models: ['big', 'small'], fallbacks: [{ provider: 'pb', model: 'small' }] }],
      },
      env: { [MGMT_UPSTREAM_ENV]: OPENAI_MOCK_KEY },
    });
  });
  after(async () => { await gw.close(); await a.close(); await b.close(); });

  test('a long prompt: big fails, and small, which cannot hold it, is skipped rather than sent it', async () => {
    const key = await gw.key('acme', 'admin');
    const ask = (content: string) => call(gw.url, key, 'POST', '/v1/chat/completions', { model: 'auto', messages: [{ role: 'user', content }] }, { 'gateway-trace': 'true' });
    a.script.push(502);
    const long = await ask('word '.repeat(500));
    assert.equal(long.status, 502, long.text);
    assert.equal(b.requests.length, 0, 'the small model was not sent a prompt it cannot hold');
    // A short prompt fits both: the fallback still backs auto up.
    a.script.push(502);
    const short = await ask('hi');
    assert.equal(short.status, 200, short.text);
    assert.equal(short.body.gateway.model, 'small');
  });
});
