// DELETE /v1/responses/{id} on the native path: the upstream keeps its own
// copy of a stored response (sluice sends the caller's `store` upstream), so
// the delete goes there first, with the gateway's credential, and the row goes
// only once the upstream no longer holds it (a 2xx, or a 404: already gone).
// An upstream that fails keeps the row and the caller gets the error; so does
// a provider that no longer reaches the upstream that made the response.
// Translated responses are sluice's alone: no upstream call.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import { HTTP_KINDS, startGateway, type TestGateway } from './helpers/gateway.js';
import { UPSTREAM_KEY_ENV, chatAndNativeUpstreams } from './helpers/fixtures.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

/** The DELETEs the mock received since `from`. */
const deletes = (mock: OpenAIMock, from = 0) => mock.requests.slice(from).filter((r) => r.method === 'DELETE');

for (const http of HTTP_KINDS) {
  describe(`responses: DELETE reaches the native upstream's copy, over ${http}`, () => {
    let mock: OpenAIMock;
    let gw: TestGateway;
    let client: OpenAI;
    let key: string;

    before(async () => {
      mock = await startOpenAIMock();
      gw = await startGateway({
        http,
        env: { [UPSTREAM_KEY_ENV]: OPENAI_MOCK_KEY },
        config: { ...chatAndNativeUpstreams(mock.url), organizations: [{ id: 'acme', models: ['up-model', 'nat-model'] }] },
      });
      key = await gw.key('acme');
      client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
    });
    after(async () => { await gw.close(); await mock.close(); });

    const del = (id: string) => fetch(`${gw.url}/v1/responses/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${key}` } });

    test('a native response is deleted upstream, at its id and with the gateway\'s credential, then here; a translated one only here', async () => {
      const r = await client.responses.create({ model: 'nat-model', input: 'forget me everywhere' });
      const n = mock.requests.length;
      const res = await del(r.id);
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { id: r.id, object: 'response', deleted: true });
      const sent = deletes(mock, n);
      assert.equal(sent.length, 1);
      assert.equal(sent[0]!.url, `/v1/responses/${r.id}`);
      assert.equal(sent[0]!.headers.authorization, `Bearer ${OPENAI_MOCK_KEY}`);
      await assert.rejects(client.responses.retrieve(r.id), (e: any) => e.status === 404);

      const t = await client.responses.create({ model: 'up-model', input: 'sluice alone' });
      const m = mock.requests.length;
      await client.responses.delete(t.id);
      assert.equal(mock.requests.length, m, 'no upstream call');
      await assert.rejects(client.responses.retrieve(t.id), (e: any) => e.status === 404);
    });

    test('an upstream that fails (500, after the retries; 401 for the gateway\'s key) keeps the row, and the caller gets the error', async () => {
      const r = await client.responses.create({ model: 'nat-model', input: 'keep me until it is gone' });
      let n = mock.requests.length;
      mock.script.push(500, 500, 500);
      await assert.rejects(client.responses.delete(r.id), (e: any) => e.status === 502 && e.code === 'upstream_error');
      assert.equal(deletes(mock, n).length, 3, 'retried as any call is');
      assert.equal((await client.responses.retrieve(r.id)).id, r.id, 'still stored');

      n = mock.requests.length;
      mock.script.push(401);
      await assert.rejects(client.responses.delete(r.id), (e: any) => e.status === 502 && e.code === 'upstream_error');
      assert.equal(deletes(mock, n).length, 1);
      assert.equal((await client.responses.retrieve(r.id)).id, r.id, 'still stored');

      // The caller's retry, once the upstream answers, deletes both.
      const res = await del(r.id);
      assert.equal(res.status, 200);
      assert.equal((await res.json() as any).deleted, true);
      await assert.rejects(client.responses.retrieve(r.id), (e: any) => e.status === 404);
    });

    test('an upstream 404 (already gone there) deletes the row here', async () => {
      const r = await client.responses.create({ model: 'nat-model', input: 'gone upstream first' });
      const gone = await fetch(`${mock.url}/v1/responses/${r.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${OPENAI_MOCK_KEY}` } });
      assert.equal(gone.status, 200);
      const n = mock.requests.length;
      const res = await del(r.id);
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { id: r.id, object: 'response', deleted: true });
      assert.equal(deletes(mock, n).length, 1, 'asked once: a 404 is not retried');
      await assert.rejects(client.responses.retrieve(r.id), (e: any) => e.status === 404);
    });
  });
}

describe('responses: DELETE of a native response whose provider no longer reaches its upstream', () => {
  let mock: OpenAIMock;
  let a: TestGateway;
  let b: TestGateway;
  let onA: OpenAI;
  let onB: OpenAI;

  // A made the responses; B, on the same database, is the gateway after a configuration change.
  const native = (url: string, extra: object = {}) => ({ kind: 'openai' as const, base_url: url, api_key_env: UPSTREAM_KEY_ENV, responses_api: true, ...extra });
  const model = (id: string) => ({ id, provider: id, context_window: 8_000, pricing: { prompt: 1, completion: 2 } });

  before(async () => {
    mock = await startOpenAIMock();
    const base = `${mock.url}/v1`;
    a = await startGateway({
      env: { [UPSTREAM_KEY_ENV]: OPENAI_MOCK_KEY },
      config: {
        providers: { nat: native(base), gone: native(base), moved: native(base), keyless: native(base) },
        models: ['nat', 'gone', 'moved', 'keyless'].map(model),
        organizations: [{ id: 'acme', models: ['nat', 'gone', 'moved', 'keyless'] }],
      },
    });
    b = await startGateway({
      database: a.db,
      config: {
        providers: { nat: native(base), moved: native(`${mock.url}/v2`), keyless: native(base, { api_key_env: 'SLUICE_TEST_NO_SUCH_KEY' }) },
        models: ['nat', 'moved', 'keyless'].map(model),
        organizations: [{ id: 'acme', models: ['nat', 'moved', 'keyless'] }],
      },
    });
    const key = await a.key('acme');
    onA = new OpenAI({ baseURL: `${a.url}/v1`, apiKey: key, maxRetries: 0 });
    onB = new OpenAI({ baseURL: `${b.url}/v1`, apiKey: key, maxRetries: 0 });
  });
  after(async () => { await b?.close(); await a?.close(); await mock?.close(); });

  /** A response made on A and landed in Postgres: A's own read waits for its pending write, and B has no Redis to wait by. */
  async function made(model: string): Promise<string> {
    const r = await onA.responses.create({ model, input: `made by ${model}` });
    return (await onA.responses.retrieve(r.id)).id;
  }

  test('gone, repointed or without its credential: refused with 409 saying why, nothing sent, the row kept', async () => {
    const cases: Array<[string, string, RegExp]> = [
      ['gone', 'conflict', /provider "gone", which is no longer configured/],
      ['moved', 'conflict', /provider "moved", which now points at another upstream/],
      ['keyless', 'model_not_configured', /provider "keyless", which has no credential mounted/],
    ];
    for (const [provider, code, message] of cases) {
      const id = await made(provider);
      const n = mock.requests.length;
      await assert.rejects(onB.responses.delete(id), (e: any) => {
        assert.equal(e.status, 409, provider);
        assert.equal(e.code, code, provider);
        assert.match(e.message, message);
        return true;
      });
      assert.equal(deletes(mock, n).length, 0, `${provider}: nothing sent`);
      assert.equal((await onB.responses.retrieve(id)).id, id, `${provider}: still stored`);
    }
    // A provider as it was is reached from any instance.
    const id = await made('nat');
    const n = mock.requests.length;
    await onB.responses.delete(id);
    assert.equal(deletes(mock, n)[0]!.url, `/v1/responses/${id}`);
    await assert.rejects(onA.responses.retrieve(id), (e: any) => e.status === 404);
  });
});
