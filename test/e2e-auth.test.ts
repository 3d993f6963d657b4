// Bearer-key authentication: hashed storage, the LRU, revocation within
// seconds, and last_used_at recorded without a write per request.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { HTTP_KINDS, startGateway, type TestGateway } from './helpers/gateway.js';
import { stopTestPostgres } from './helpers/pg.js';
import { hashKey, KEY_PREFIX } from '../src/auth/key-format.js';
import { createKey, ensureOrganizations, listKeys, revokeKey } from '../src/store/api-keys-repo.js';

after(stopTestPostgres);

for (const http of HTTP_KINDS) {
  describe(`authentication over ${http}`, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startGateway({ http, config: { auth: { cache_ttl_ms: 500, last_used_flush_ms: 200 }, organizations: [{ id: 'acme', models: ['mock-echo'] }] } });
      await ensureOrganizations(gw.app.services.pool, ['acme']);
    });
    after(() => gw.close());

    const chat = (key: string | undefined) => fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: key === undefined ? {} : { authorization: key },
      body: JSON.stringify({ model: 'mock-echo', messages: [{ role: 'user', content: 'hi' }] }),
    });

    test('keys are high-entropy with a recognisable prefix, and only their SHA-256 is stored', async () => {
      const k = await createKey(gw.app.services.pool, 'acme', 'ci', 'user');
      assert.ok(k.key.startsWith(KEY_PREFIX));
      assert.ok(k.key.length >= KEY_PREFIX.length + 43);
      assert.match(k.id, /^key_/);
      assert.ok(k.key.startsWith(k.prefix) && k.prefix.length < k.key.length - 30);
      const { rows } = await gw.app.services.pool.query('SELECT * FROM api_keys WHERE id = $1', [k.id]);
      assert.deepEqual(rows[0].key_hash, hashKey(k.key));
      assert.ok(!JSON.stringify(rows[0]).includes(k.key.slice(KEY_PREFIX.length)), 'the secret is not stored');
    });

    test('missing, malformed and unknown keys are 401 unauthorized in JSON', async () => {
      for (const h of [undefined, 'Basic abc', 'Bearer ', 'Bearer sk-sluice-unknown']) {
        const res = await chat(h);
        assert.equal(res.status, 401, String(h));
        const body: any = await res.json();
        assert.equal(body.error.code, 'unauthorized');
        assert.equal(body.error.type, 'authentication_error');
        assert.match(body.request_id, /^req_/);
      }
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-sluice-wrong', maxRetries: 0 });
      await assert.rejects(client.chat.completions.create({ model: 'mock-echo', messages: [{ role: 'user', content: 'x' }] }), OpenAI.AuthenticationError);
    });

    test('a revoked key fails within seconds, even after being cached', async () => {
      const k = await createKey(gw.app.services.pool, 'acme', 'doomed', 'user');
      assert.equal((await chat(`Bearer ${k.key}`)).status, 200);
      assert.equal((await chat(`Bearer ${k.key}`)).status, 200, 'now served from the LRU');
      assert.ok(await revokeKey(gw.app.services.pool, k.id));
      const revokedAt = Date.now();
      while ((await chat(`Bearer ${k.key}`)).status !== 401) {
        assert.ok(Date.now() - revokedAt < 2_000, 'revocation must take effect within the cache TTL');
        await new Promise((r) => setTimeout(r, 50));
      }
    });

    test('last_used_at is recorded by a batched flush, not a write per request', async () => {
      const k = await createKey(gw.app.services.pool, 'acme', 'used', 'user');
      const before = (await listKeys(gw.app.services.pool, 'acme')).find((x) => x.id === k.id)!;
      assert.equal(before.last_used_at, null);
      const t0 = Date.now();
      await chat(`Bearer ${k.key}`);
      let seen: string | null = null;
      const deadline = Date.now() + 3_000;
      while (!seen && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
        seen = (await listKeys(gw.app.services.pool, 'acme')).find((x) => x.id === k.id)!.last_used_at;
      }
      assert.ok(seen, 'last_used_at was written');
      assert.ok(Math.abs(Date.parse(seen!) - t0) < 2_000);
    });
  });
}
