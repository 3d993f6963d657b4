// GET /v1/models: the six rules of section 4.3 and both filters, through the SDK and raw HTTP.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import { HTTP_KINDS, startGateway, type TestGateway } from './helpers/gateway.js';
import { oneUpstreamConfig, UPSTREAM_KEY_ENV } from './helpers/fixtures.js';
import { stopTestPostgres } from './helpers/pg.js';
import { MODEL_CREATED } from '../src/pipeline/models.js';

after(stopTestPostgres);

for (const http of HTTP_KINDS) {
  describe(`GET /v1/models over ${http}`, () => {
    let mock: OpenAIMock;
    let gw: TestGateway;
    let acme: string;
    let beta: string;
    const dir = mkdtempSync(join(tmpdir(), 'sluice-cred-'));
    const credFile = join(dir, 'key');

    before(async () => {
      mock = await startOpenAIMock();
      writeFileSync(credFile, OPENAI_MOCK_KEY);
      const base = oneUpstreamConfig(mock.url);
      gw = await startGateway({
        http,
        env: { [UPSTREAM_KEY_ENV]: OPENAI_MOCK_KEY },
        config: {
          ...base,
          providers: {
            ...base.providers,
            // A second provider serving an id `up` also serves: rule 4 picks the one a pinned call routes to.
            twin: { kind: 'openai', base_url: `${mock.url}/v1`, api_key_env: 'SLUICE_TEST_UNSET_KEY' },
            mounted: { kind: 'openai', base_url: `${mock.url}/v1`, api_key_file: credFile },
          },
          models: [
            { id: 'up-model', provider: 'twin', context_window: 1_000, pricing: { prompt: 9, completion: 9 } },
            ...base.models!,
            { id: 'mounted-model', provider: 'mounted', context_window: 4_000, pricing: { prompt: 1, completion: 1 } },
            { id: 'meta-llama/Llama-3.1-8B', provider: 'up', context_window: 2_000, pricing: { prompt: 1, completion: 1 } },
          ],
          organizations: [
            { id: 'acme', models: ['up-model', 'up-small', 'gpt-4o', 'text-embedding-3-small', 'mounted-model', 'meta-llama/Llama-3.1-8B'] },
            { id: 'beta', models: ['mock-echo', 'mock-embed'] },
          ],
        },
      });
      acme = await gw.key('acme');
      beta = await gw.key('beta');
    });
    after(async () => { await gw.close(); await mock.close(); rmSync(dir, { recursive: true, force: true }); });

    const list = async (key: string, query = '') => {
      const res = await fetch(`${gw.url}/v1/models${query}`, { headers: { authorization: `Bearer ${key}` } });
      return { status: res.status, body: (await res.json()) as any };
    };

    test('the SDK lists the organisation\'s models, auto first', async () => {
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: acme, maxRetries: 0 });
      const ids: string[] = [];
      for await (const m of client.models.list()) ids.push(m.id);
      assert.equal(ids[0], 'auto');
      assert.deepEqual(ids.slice(1).sort(), ['gpt-4o', 'meta-llama/Llama-3.1-8B', 'mounted-model', 'up-model', 'up-small']);
    });

    test('the SDK retrieves one model: the listing\'s entry, or 404 model_not_found for what the listing does not show', async () => {
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: acme, maxRetries: 0 });
      const listed = (await list(acme)).body.data;
      for (const id of ['auto', 'up-model', 'gpt-4o', 'meta-llama/Llama-3.1-8B']) {
        assert.deepEqual(await client.models.retrieve(id), listed.find((m: any) => m.id === id), id);
      }
      // A self-hosted id's slash sent as is, as curl would.
      const raw = await fetch(`${gw.url}/v1/models/meta-llama/Llama-3.1-8B`, { headers: { authorization: `Bearer ${acme}` } });
      assert.equal(raw.status, 200);
      assert.equal(((await raw.json()) as any).id, 'meta-llama/Llama-3.1-8B');
      // An embedding model is not listed (rule 5), another organisation's model is not this one's, and an unknown id is unknown.
      for (const id of ['text-embedding-3-small', 'mock-echo', 'nope', 'meta-llama/nope']) {
        await assert.rejects(client.models.retrieve(id), (e: any) => e.status === 404 && e.code === 'model_not_found' && e.param === 'model', id);
      }
      const anon = await fetch(`${gw.url}/v1/models/up-model`);
      assert.equal(anon.status, 401);
    });

    test('every entry has the 2.1 fields; created is a fixed constant', async () => {
      const { body } = await list(acme);
      assert.equal(body.object, 'list');
      for (const m of body.data) {
        assert.deepEqual(Object.keys(m).sort(), ['aliases', 'configured', 'context_window', 'created', 'id', 'object', 'owned_by', 'pricing', 'provider']);
        assert.equal(m.created, MODEL_CREATED);
        assert.equal(m.object, 'model');
      }
      const up = body.data.find((m: any) => m.id === 'up-model');
      assert.deepEqual(up.aliases, ['up-alias']);
      assert.deepEqual(up.pricing, { prompt: 1, completion: 2 });
      assert.equal(up.context_window, 8_000);
    });

    test('two organisations get different answers; embedding models never appear', async () => {
      const a = (await list(acme)).body.data.map((m: any) => m.id);
      const b = (await list(beta)).body.data.map((m: any) => m.id);
      assert.deepEqual(b, ['auto', 'mock-echo']);
      assert.ok(!a.includes('text-embedding-3-small'));
      assert.ok(!b.includes('mock-embed'));
    });

    test('ids are unique, and a shared id shows the provider a pinned call routes to', async () => {
      const { body } = await list(acme);
      const ids = body.data.map((m: any) => m.id);
      assert.equal(new Set(ids).size, ids.length);
      const up = body.data.find((m: any) => m.id === 'up-model');
      assert.equal(up.provider, 'up', 'twin is listed first but has no credential; a pinned call goes to up');
      const chat = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST', headers: { authorization: `Bearer ${acme}`, 'gateway-trace': 'true' },
        body: JSON.stringify({ model: 'up-model', messages: [{ role: 'user', content: 'x' }] }),
      });
      assert.equal(((await chat.json()) as any).gateway.provider, up.provider);
    });

    test('an activated model without a credential is listed with configured false, not hidden', async () => {
      const { body } = await list(acme);
      assert.equal(body.data.find((m: any) => m.id === 'gpt-4o').configured, false);
    });

    test('filters: provider, and configured in both directions', async () => {
      const byProvider = (await list(acme, '?provider=openai')).body.data.map((m: any) => m.id);
      assert.deepEqual(byProvider, ['gpt-4o']);
      const configured = (await list(acme, '?configured=true')).body.data.map((m: any) => m.id);
      assert.ok(configured.includes('up-model') && configured.includes('auto') && !configured.includes('gpt-4o'));
      const unconfigured = (await list(acme, '?configured=false')).body.data.map((m: any) => m.id);
      assert.deepEqual(unconfigured, ['gpt-4o']);
      const bad = await list(acme, '?configured=maybe');
      assert.equal(bad.status, 400);
      assert.equal(bad.body.error.param, 'configured');
    });

    test('a mounted credential file is followed live: removed, then restored', async () => {
      const state = async () => (await list(acme)).body.data.find((m: any) => m.id === 'mounted-model').configured;
      const until = async (want: boolean) => {
        const deadline = Date.now() + 5_000;
        while ((await state()) !== want) {
          if (Date.now() > deadline) throw new Error(`configured never became ${want}`);
          await new Promise((r) => setTimeout(r, 100));
        }
      };
      await until(true);
      rmSync(credFile);
      await until(false);
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST', headers: { authorization: `Bearer ${acme}` },
        body: JSON.stringify({ model: 'mounted-model', messages: [{ role: 'user', content: 'x' }] }),
      });
      assert.equal(res.status, 409, 'an unconfigured model cannot be routed to');
      writeFileSync(credFile, OPENAI_MOCK_KEY);
      await until(true);
    });

    test('a bad key is 401 unauthorized', async () => {
      const res = await list('sk-sluice-nope');
      assert.equal(res.status, 401);
      assert.equal(res.body.error.code, 'unauthorized');
    });
  });
}
