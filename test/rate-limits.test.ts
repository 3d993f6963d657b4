// Rate limits and budgets on one instance, in process (no Redis): per key and
// per organisation, requests and tokens per minute, 429s the openai SDK backs
// off on correctly, our x-ratelimit-* headers on success, budgets seeded from
// the traces in Postgres, /v1/models never gated, and the key limits API
// (create, PATCH merge, validation, usage).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import { startGateway, type TestGateway } from './helpers/gateway.js';
import { call, chatBody, MGMT_UPSTREAM_ENV, routingConfig, type Reply } from './helpers/management.js';
import { stopTestPostgres } from './helpers/pg.js';
import { openStream } from './helpers/raw-stream.js';

after(stopTestPostgres);

describe('rate limits and budgets, in process', () => {
  let mock: OpenAIMock;
  let gw: TestGateway;
  let admin: string;
  let betaAdmin: string;

  before(async () => {
    mock = await startOpenAIMock();
    const base = routingConfig(mock.url);
    gw = await startGateway({
      config: { ...base, organizations: [base.organizations![0]!, { id: 'beta', models: ['up-dear'], limits: { rpm: 3 } }] },
      env: { [MGMT_UPSTREAM_ENV]: OPENAI_MOCK_KEY },
      realTraces: true,
    });
    admin = await gw.key('acme', 'admin');
    betaAdmin = await gw.key('beta', 'admin');
  });
  after(async () => { await gw.close(); await mock.close(); });

  const newKey = async (limits?: unknown, owner = admin): Promise<{ id: string; key: string; limits?: unknown }> => {
    const r = await call(gw.url, owner, 'POST', '/v1/api-keys', { name: 'limited', ...(limits === undefined ? {} : { limits }) });
    assert.equal(r.status, 201, r.text);
    return r.body;
  };
  const chat = (key: string, model = 'cheap', content = 'hello'): Promise<Reply> => call(gw.url, key, 'POST', '/v1/chat/completions', chatBody(model, content));
  const h = (r: Reply, name: string) => r.headers.get(name);

  test('requests per minute per key: limit headers on success, then 429 rate_limited with retry-after', async () => {
    const k = await newKey({ rpm: 2 });
    assert.deepEqual(k.limits, { rpm: 2 });
    const first = await chat(k.key);
    assert.equal(first.status, 200);
    assert.equal(h(first, 'x-ratelimit-limit-requests'), '2');
    assert.equal(h(first, 'x-ratelimit-remaining-requests'), '1');
    assert.match(h(first, 'x-ratelimit-reset-requests')!, /^\d+(\.\d)?s$/);
    assert.equal(h((await chat(k.key)), 'x-ratelimit-remaining-requests'), '0');
    const refused = await chat(k.key);
    assert.equal(refused.status, 429);
    assert.equal(refused.body.error.code, 'rate_limited');
    assert.equal(refused.body.error.type, 'rate_limit_error');
    const ms = Number(h(refused, 'retry-after-ms'));
    assert.ok(ms > 29_000 && ms <= 30_000, `one request every 30 s: retry-after-ms ${ms}`);
    assert.equal(h(refused, 'retry-after'), String(Math.ceil(ms / 1000)));
    assert.equal(h(refused, 'x-ratelimit-remaining-requests'), '0');
    assert.equal((await call(gw.url, k.key, 'GET', '/v1/models')).status, 200, '/v1/models is never gated');
    const other = await newKey();
    assert.equal((await chat(other.key)).status, 200, 'another key of the organisation is not affected');
  });

  test('organisation limits are shared by its keys', async () => {
    const [k1, k2] = [await newKey(undefined, betaAdmin), await newKey(undefined, betaAdmin)];
    assert.equal((await chat(k1.key, 'dear')).status, 200);
    assert.equal((await chat(k2.key, 'dear')).status, 200);
    assert.equal((await chat(k1.key, 'dear')).status, 200);
    const r = await chat(k2.key, 'dear');
    assert.equal(r.status, 429);
    assert.equal(h(r, 'x-ratelimit-limit-requests'), '3');
  });

  test('tokens per minute: the prompt estimate is charged, then settled to the real usage', async () => {
    const k = await newKey({ tpm: 1_000 });
    const big = 'word '.repeat(1_000); // about 1250 tokens by the estimate
    const over = await chat(k.key, 'cheap', big);
    assert.equal(over.status, 429, 'a prompt larger than the limit is refused');
    const ok = await chat(k.key, 'cheap', 'word '.repeat(200)); // estimate 257; the mock reports about 400 (prompt and echo)
    assert.equal(ok.status, 200);
    const used = ok.body.usage.total_tokens as number;
    assert.ok(Math.abs(used - 257) > 50, `usage ${used} differs from the estimate`);
    await new Promise((r) => setTimeout(r, 50));
    const usage = await call(gw.url, admin, 'GET', `/v1/api-keys/${k.id}/usage`);
    assert.equal(usage.status, 200);
    const tokens = usage.body.usage.key.tokens;
    assert.equal(tokens.limit, 1_000);
    // Settled to the real usage, give or take the refill since (about 17 tokens a second), not to the estimate.
    assert.ok(Math.abs(tokens.remaining - (1_000 - used)) <= 10, `${JSON.stringify(tokens)} after using ${used}`);
  });

  test('tokens per minute: the estimate counts a prompt carried in tools, an earlier turn\'s call arguments or a part of another kind', async () => {
    const big = 'word '.repeat(1_000); // about 1250 tokens
    const bodies: Record<string, object> = {
      tools: { messages: [{ role: 'user', content: 'hi' }], tools: [{ type: 'function', function: { name: 'f', description: big, parameters: { type: 'object' } } }] },
      'call arguments': { messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: JSON.stringify({ q: big }) } }] },
        { role: 'tool', tool_call_id: 'c', content: 'ok' },
      ] },
      // Two images: 765 tokens each, as a provider bills them, whatever their URL's length.
      'media parts': { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }, { type: 'image_url', image_url: { url: 'https://example.com/b.png' } }] }] },
    };
    for (const [name, body] of Object.entries(bodies)) {
      const k = await newKey({ tpm: 1_000 });
      const r = await call(gw.url, k.key, 'POST', '/v1/chat/completions', { model: 'cheap', ...body });
      assert.equal(r.status, 429, `${name}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.code, 'rate_limited', name);
    }
  });

  test('a prompt larger than the whole tpm limit is refused for good: x-should-retry false, no retry-after, and the SDK does not retry', async () => {
    const k = await newKey({ tpm: 100 });
    const r = await chat(k.key, 'cheap', 'word '.repeat(400));
    assert.equal(r.status, 429);
    assert.equal(r.body.error.code, 'rate_limited');
    assert.match(r.body.error.message, /never be admitted/);
    assert.equal(h(r, 'x-should-retry'), 'false');
    assert.equal(h(r, 'retry-after'), null);
    assert.equal(h(r, 'retry-after-ms'), null);
    const before = mock.requests.length;
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: k.key, maxRetries: 2 });
    const t0 = performance.now();
    await assert.rejects(client.chat.completions.create({ model: 'cheap', messages: [{ role: 'user', content: 'word '.repeat(400) }] }), (e: any) => e.status === 429);
    assert.ok(performance.now() - t0 < 1_000, 'no backoff: x-should-retry is false');
    assert.equal(mock.requests.length, before);
    assert.equal((await chat(k.key)).status, 200, 'nothing was charged: a small prompt passes');
  });

  test('a meter in debt for minutes says the true wait in retry-after, and that the SDK should not retry', async () => {
    const k = await newKey({ tpm: 1_000 });
    // Usage is known only afterwards: 100000 tokens against 1000 a minute is about 100 minutes of debt.
    mock.replay = {
      json: { id: 'x', object: 'chat.completion', created: 1, model: 'up-cheap', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 50_000, completion_tokens: 50_000, total_tokens: 100_000 } },
    };
    try {
      assert.equal((await chat(k.key)).status, 200);
    } finally { mock.replay = undefined; }
    await new Promise((ok) => setTimeout(ok, 50));
    const r = await chat(k.key);
    assert.equal(r.status, 429);
    const ms = Number(h(r, 'retry-after-ms'));
    assert.ok(ms > 98 * 60_000 && ms <= 100 * 60_000, `retry-after-ms ${ms}`);
    assert.equal(h(r, 'retry-after'), String(Math.ceil(ms / 1000)));
    assert.equal(h(r, 'x-should-retry'), 'false');
    assert.match(h(r, 'x-ratelimit-reset-tokens')!, /^1h[34]\dm/);
    const before = mock.requests.length;
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: k.key, maxRetries: 2 });
    const t0 = performance.now();
    await assert.rejects(client.chat.completions.create({ model: 'cheap', messages: [{ role: 'user', content: 'x' }] }), (e: any) => e.status === 429);
    assert.ok(performance.now() - t0 < 1_000, 'the SDK neither slept the wait nor retried on its own backoff');
    assert.equal(mock.requests.length, before);
  });

  test('our headers replace the upstream\'s of the kind we limit; the upstream\'s others pass', async () => {
    const k = await newKey({ rpm: 50 });
    mock.replay = {
      headers: { 'x-ratelimit-limit-requests': '9999', 'x-ratelimit-limit-tokens': '777' },
      json: { id: 'x', object: 'chat.completion', created: 1, model: 'up-cheap', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } },
    };
    try {
      const r = await chat(k.key);
      assert.equal(r.status, 200);
      assert.equal(h(r, 'x-ratelimit-limit-requests'), '50');
      assert.equal(h(r, 'x-ratelimit-limit-tokens'), '777');
    } finally { mock.replay = undefined; }
  });

  test('the openai SDK waits the retry-after we send, then succeeds', async () => {
    // 30 a minute is one every 2 s once the burst of 30 is spent: a short retry-after.
    const k = await newKey({ rpm: 30 });
    let refused: Reply | undefined;
    for (let i = 0; i < 40 && !refused; i++) {
      const r = await chat(k.key);
      if (r.status === 429) refused = r;
    }
    assert.ok(refused, 'the burst runs out');
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: k.key, maxRetries: 2 });
    const t0 = performance.now();
    const first = await chat(k.key);
    assert.equal(first.status, 429);
    const wait = Number(h(first, 'retry-after-ms'));
    const before = mock.requests.length;
    const done = await client.chat.completions.create({ model: 'cheap', messages: [{ role: 'user', content: 'patience' }] });
    const elapsed = performance.now() - t0;
    assert.equal(done.choices[0]!.message.content, 'patience');
    assert.ok(elapsed >= wait, `the SDK waited ${elapsed.toFixed(0)} ms for a retry-after of ${wait} ms`);
    assert.equal(mock.requests.length - before, 1, 'only the admitted attempt reached the upstream');
  });

  test('a budget seeded from the traces in Postgres is enforced: 429 budget_exceeded, and the SDK does not retry', async () => {
    const k = await newKey();
    // Spend from before this instance knew of a budget: only the traces know it.
    await gw.app.services.pool.query(
      `INSERT INTO traces (request_id, organization_id, api_key_id, endpoint, latency_ms, prompt_tokens, completion_tokens, total_tokens,
         cost_usd, status_code, redactions, streamed, stream_aborted, disclosed_bytes, dry_run, has_payload, created_at)
       VALUES ('req_seed_1', 'acme', $1, 'chat', 1, 1, 1, 2, 0.75, 200, 0, false, false, 0, false, false, now())`, [k.id]);
    const set = await call(gw.url, admin, 'PATCH', `/v1/api-keys/${k.id}`, { limits: { budget_usd: { amount: 0.5, period: 'day' } } });
    assert.equal(set.status, 200, set.text);
    const r = await chat(k.key);
    assert.equal(r.status, 429);
    assert.equal(r.body.error.code, 'budget_exceeded');
    assert.equal(h(r, 'x-should-retry'), 'false');
    const usage = await call(gw.url, admin, 'GET', `/v1/api-keys/${k.id}/usage`);
    assert.equal(usage.body.usage.key.budget_usd.spent, 0.75);
    assert.equal(usage.body.usage.key.budget_usd.remaining, 0);
    const before = mock.requests.length;
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: k.key, maxRetries: 2 });
    const t0 = performance.now();
    await assert.rejects(client.chat.completions.create({ model: 'cheap', messages: [{ role: 'user', content: 'x' }] }), (e: any) => e.status === 429);
    assert.ok(performance.now() - t0 < 1_000, 'no backoff: x-should-retry is false');
    assert.equal(mock.requests.length, before);
    // Raising the budget lets the key spend again.
    await call(gw.url, admin, 'PATCH', `/v1/api-keys/${k.id}`, { limits: { budget_usd: { amount: 5, period: 'day' } } });
    assert.equal((await chat(k.key)).status, 200);
  });

  test('spend counts as requests record their cost; over budget the next request is refused', async () => {
    const k = await newKey({ budget_usd: { amount: 0.000001, period: 'month' } });
    const first = await call(gw.url, k.key, 'POST', '/v1/chat/completions', chatBody('dear', 'spend some money please'));
    assert.equal(first.status, 200);
    const second = await chat(k.key, 'dear');
    assert.equal(second.status, 429);
    assert.equal(second.body.error.code, 'budget_exceeded');
  });

  test('a stream the caller leaves mid-way is charged what the upstream made of it: spend counts, the next request over budget is refused', async () => {
    const k = await newKey({ budget_usd: { amount: 0.000001, period: 'month' } });
    // 40 words 50 ms apart: the caller leaves after a few, two seconds before the end.
    mock.fault = 'slow-chunks';
    mock.slowMs = 50;
    try {
      const s = openStream(gw.url, k.key, { ...chatBody('dear', 'w '.repeat(40)), stream: true });
      assert.match(await s.first, /^HTTP\/1\.1 200/);
      await new Promise((r) => setTimeout(r, 300));
      s.socket.destroy();
      let spent = 0;
      for (const t0 = Date.now(); spent === 0 && Date.now() - t0 < 3_000; await new Promise((r) => setTimeout(r, 50))) {
        spent = (await call(gw.url, admin, 'GET', `/v1/api-keys/${k.id}/usage`)).body.usage.key.budget_usd.spent;
      }
      assert.ok(spent > 0, 'the abandoned stream\'s cost reached the budget');
    } finally {
      mock.fault = 'none';
    }
    const next = await chat(k.key, 'dear');
    assert.equal(next.status, 429);
    assert.equal(next.body.error.code, 'budget_exceeded');
  });

  test('PATCH changes only the supplied fields; null clears a limit; 400s name the field; 404 across organisations', async () => {
    const k = await newKey({ rpm: 10, tpm: 5_000 });
    let r = await call(gw.url, admin, 'PATCH', `/v1/api-keys/${k.id}`, { limits: { tpm: null, budget_usd: { amount: 3, period: 'month' } } });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.limits, { rpm: 10, budget_usd: { amount: 3, period: 'month' } });
    assert.equal(r.body.name, 'limited');
    r = await call(gw.url, admin, 'PATCH', `/v1/api-keys/${k.id}`, { name: 'renamed' });
    assert.equal(r.body.name, 'renamed');
    assert.deepEqual(r.body.limits, { rpm: 10, budget_usd: { amount: 3, period: 'month' } });
    assert.deepEqual(Object.keys(r.body).sort(), ['created_at', 'id', 'last_used_at', 'limits', 'name', 'object', 'prefix', 'role']);
    const listed = (await call(gw.url, admin, 'GET', '/v1/api-keys')).body.data.find((x: any) => x.id === k.id);
    assert.deepEqual(listed.limits, r.body.limits);
    for (const [body, param] of [
      [{ limits: { rpm: 0 } }, 'limits.rpm'], [{ limits: { rpm: 1.5 } }, 'limits.rpm'], [{ limits: { rpd: 1 } }, 'limits.rpd'],
      [{ limits: { budget_usd: { amount: 1, period: 'week' } } }, 'limits.budget_usd.period'],
      [{ limits: { budget_usd: { amount: -1, period: 'day' } } }, 'limits.budget_usd.amount'], [{ role: 'owner' }, 'role'], [{ secret: 'x' }, 'secret'],
    ] as const) {
      const bad = await call(gw.url, admin, 'PATCH', `/v1/api-keys/${k.id}`, body);
      assert.equal(bad.status, 400, JSON.stringify(body));
      assert.equal(bad.body.error.param, param);
    }
    const badCreate = await call(gw.url, admin, 'POST', '/v1/api-keys', { name: 'x', limits: { tpm: 'lots' } });
    assert.equal(badCreate.body.error.param, 'limits.tpm');
    assert.equal((await call(gw.url, betaAdmin, 'PATCH', `/v1/api-keys/${k.id}`, { name: 'mine' })).status, 404);
    assert.equal((await call(gw.url, betaAdmin, 'GET', `/v1/api-keys/${k.id}/usage`)).status, 404);
    r = await call(gw.url, admin, 'PATCH', `/v1/api-keys/${k.id}`, { limits: null });
    assert.equal(r.body.limits, undefined, 'no limits left');
    const usage = await call(gw.url, admin, 'GET', `/v1/api-keys/${k.id}/usage`);
    assert.deepEqual({ ...usage.body, id: undefined }, { object: 'api_key.usage', id: undefined, limits: null, organization_limits: null, usage: { key: null, organization: null } });
  });
});
