// Concurrent PATCHes of different fields of one route or one key, through real
// HTTP: each acknowledged change must be stored (none overwritten by another
// PATCH that read the row before it), and this instance must apply the final
// state at once, even when its poll was under way as the last one committed. Until 2026-11-29 a PATCH read the row, merged in JS and wrote
// every column back, so two admins (or two instances) at once lost one change.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { OpenAIMock } from './mocks/openai-mock.js';
import type { TestGateway } from './helpers/gateway.js';
import { startRoutingGateway } from './helpers/routing-gateway.js';
import { call } from './helpers/management.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

const ROUNDS = 20;

describe('concurrent PATCHes', () => {
  let mock: OpenAIMock;
  let gw: TestGateway;
  let admin: string;
  const api = (method: string, path: string, body?: unknown) => call(gw.url, admin, method, path, body);

  before(async () => { ({ mock, gw, admin } = await startRoutingGateway()); });
  after(async () => { await gw.close(); await mock.close(); });

  test('of one route: every acknowledged field is stored, and the rule is off on this instance at once', async () => {
    for (let i = 0; i < ROUNDS; i++) {
      const c = await api('POST', '/v1/routes', {
        name: `race-${i}`, action_kind: 'pin', match: { requested_model: `m-${i}` }, action: { provider: 'up', model: 'up-cheap' },
      });
      assert.equal(c.status, 201, c.text);
      const patches = [
        { enabled: false },
        { priority: 7 },
        { name: `raced-${i}` },
        { match: { requested_model: `moved-${i}` } },
        { action: { provider: 'up', model: 'up-dear' } },
      ];
      const replies = await Promise.all(patches.map((p) => api('PATCH', `/v1/routes/${c.body.id}`, p)));
      for (const r of replies) assert.equal(r.status, 200, r.text);
      const got = (await api('GET', `/v1/routes/${c.body.id}`)).body;
      assert.deepEqual(
        { name: got.name, priority: got.priority, enabled: got.enabled, match: got.match, action: got.action },
        { name: `raced-${i}`, priority: 7, enabled: false, match: { requested_model: `moved-${i}` }, action: { provider: 'up', model: 'up-dear' } },
        `round ${i}: a PATCH answered 200 and its change was lost`,
      );
      const rules = gw.app.services.rules;
      assert.equal(rules('acme', `m-${i}`), undefined, `round ${i}: the disabled rule still routes its old model here`);
      assert.equal(rules('acme', `moved-${i}`), undefined, `round ${i}: the disabled rule routes its new model here`);
    }
  });

  test('of one key: name, role and each limit are stored, and this instance enforces every limit at once', async () => {
    const budget = { amount: 3, period: 'month' };
    for (let i = 0; i < ROUNDS; i++) {
      const k = await api('POST', '/v1/api-keys', { name: `lr-${i}` });
      assert.equal(k.status, 201, k.text);
      const patches = [{ limits: { rpm: 100 } }, { limits: { tpm: 5_000 } }, { limits: { budget_usd: budget } }, { name: `raced-${i}` }, { role: 'admin' }];
      const replies = await Promise.all(patches.map((p) => api('PATCH', `/v1/api-keys/${k.body.id}`, p)));
      for (const r of replies) assert.equal(r.status, 200, r.text);
      const listed = (await api('GET', '/v1/api-keys')).body.data.find((x: any) => x.id === k.body.id);
      assert.deepEqual(
        { name: listed.name, role: listed.role, limits: listed.limits },
        { name: `raced-${i}`, role: 'admin', limits: { rpm: 100, tpm: 5_000, budget_usd: budget } },
        `round ${i}: a PATCH answered 200 and its change was lost`,
      );
      assert.deepEqual(gw.app.services.limits.keySpec(k.body.id), { rpm: 100, tpm: 5_000, budget_usd: budget },
        `round ${i}: this instance took every write but does not apply them all`);
    }
  });

  test('a key\'s limits committed while this instance\'s poll is under way are applied before the PATCH answers', async () => {
    const k = await api('POST', '/v1/api-keys', { name: 'mid-poll' });
    const { pool, limits } = gw.app.services;
    const query = pool.query;
    const read = query.bind(pool) as (text: string, values?: unknown[]) => Promise<{ rows: any[] }>;
    const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));
    let release!: () => void;
    const gate = new Promise<void>((ok) => { release = ok; });
    let held = false;
    // The next poll reads at once, before the PATCH below commits, and answers only when released.
    pool.query = (async (...args: unknown[]) => {
      const res = await (read as (...a: unknown[]) => Promise<unknown>)(...args);
      if (!held && typeof args[0] === 'string' && args[0].includes('FROM api_key_limits l')) { held = true; await gate; }
      return res;
    }) as typeof pool.query;
    try {
      const early = limits.refresh();
      while (!held) await sleep(5);
      const patch = api('PATCH', `/v1/api-keys/${k.body.id}`, { limits: { rpm: 42 } });
      const stored = async () => (await read('SELECT rpm FROM api_key_limits WHERE api_key_id = $1', [k.body.id])).rows[0]?.rpm;
      while (await stored() !== 42) await sleep(5);
      release();
      await early;
      assert.equal((await patch).status, 200);
      assert.deepEqual(limits.keySpec(k.body.id), { rpm: 42 }, 'the PATCH answered before this instance applied it');
    } finally {
      pool.query = query;
      release();
    }
  });
});
