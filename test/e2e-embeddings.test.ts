// POST /v1/embeddings: every rule of section 4.2, with the openai SDK and raw HTTP.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import { HTTP_KINDS, startGateway, type TestGateway } from './helpers/gateway.js';
import { stopTestPostgres } from './helpers/pg.js';
import { decodeBase64 } from '../src/providers/embeddings-encoding.js';

after(stopTestPostgres);

for (const http of HTTP_KINDS) {
  describe(`embeddings over ${http}`, () => {
    let mock: OpenAIMock;
    let open: OpenAIMock;
    let gw: TestGateway;
    let client: OpenAI;
    let key: string;

    before(async () => {
      mock = await startOpenAIMock();
      open = await startOpenAIMock(null);
      gw = await startGateway({
        http,
        env: { SLUICE_T_OPENAI: OPENAI_MOCK_KEY },
        config: {
          providers: {
            openai: { kind: 'openai', base_url: `${mock.url}/v1`, api_key_env: 'SLUICE_T_OPENAI' },
            selfhosted: { kind: 'openai', base_url: `${open.url}/v1`, no_auth: true },
          },
          models: [{ id: 'bge-small', provider: 'selfhosted', type: 'embedding', context_window: 512, pricing: { prompt: 0.5, completion: 0 } }],
          organizations: [{ id: 'acme', models: ['bge-small'] }],
        },
      });
      key = await gw.key('acme');
      client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
    });
    after(async () => { await gw.close(); await mock.close(); await open.close(); });

    const post = (body: unknown, headers: Record<string, string> = {}) => fetch(`${gw.url}/v1/embeddings`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, ...headers }, body: JSON.stringify(body),
    });

    test('a catalogue model needs no activation; the SDK (base64 by default) and float agree exactly', async () => {
      const viaSdk = await client.embeddings.create({ model: 'text-embedding-3-small', input: ['hello', 'world!'] });
      assert.equal(mock.requests.at(-1)!.body.encoding_format, 'float', 'the upstream is always asked for floats');
      const float: any = await (await post({ model: 'text-embedding-3-small', input: ['hello', 'world!'], encoding_format: 'float' })).json();
      assert.deepEqual(viaSdk.data.map((d) => d.embedding), float.data.map((d: any) => d.embedding.map((v: number) => Math.fround(v))));
      assert.deepEqual(float.data.map((d: any) => d.index), [0, 1]);
      assert.equal(float.object, 'list');
      assert.equal(float.model, 'text-embedding-3-small');
    });

    test('a string input gives one embedding; dimensions and user pass through', async () => {
      const r = await client.embeddings.create({ model: 'text-embedding-3-large', input: 'just one', dimensions: 3, user: 'u-42', encoding_format: 'float' });
      assert.equal(r.data.length, 1);
      assert.equal(r.data[0]!.embedding.length, 3);
      const sent = mock.requests.at(-1)!.body;
      assert.equal(sent.dimensions, 3);
      assert.equal(sent.user, 'u-42');
    });

    test('a field the gateway does not read goes to an OpenAI-compatible upstream as sent', async () => {
      const res = await post({ model: 'text-embedding-3-small', input: ['x'], truncate_prompt_tokens: 8, extra: { nested: [1, 'two'] }, encoding_format: 'base64' });
      assert.equal(res.status, 200);
      const sent = mock.requests.at(-1)!.body;
      assert.equal(sent.truncate_prompt_tokens, 8);
      assert.deepEqual(sent.extra, { nested: [1, 'two'] });
      assert.equal(sent.encoding_format, 'float', 'the gateway still asks for floats and encodes base64 itself');
      assert.deepEqual(sent.input, ['x']);
      // A member named as an object's prototype is sent as one, not taken for the body's prototype.
      const odd = await fetch(`${gw.url}/v1/embeddings`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: '{"model":"text-embedding-3-small","input":"x","__proto__":{"polluted":1}}' });
      assert.equal(odd.status, 200);
      assert.deepEqual(Object.getOwnPropertyDescriptor(mock.requests.at(-1)!.body, '__proto__')?.value, { polluted: 1 });
    });

    test('members of the upstream answer the gateway does not write go back as sent, usage details too', async () => {
      mock.replay = { json: {
        id: 'emb-123', object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.5, -0.25] }], model: 'text-embedding-3-small-2024',
        usage: { prompt_tokens: 3, total_tokens: 3, prompt_tokens_details: { cached_tokens: 1 } }, service_tier: 'default',
      } };
      try {
        for (const encoding_format of ['float', 'base64']) {
          const body: any = await (await post({ model: 'text-embedding-3-small', input: 'x', encoding_format })).json();
          assert.equal(body.id, 'emb-123');
          assert.equal(body.service_tier, 'default');
          assert.deepEqual(body.usage, { prompt_tokens: 3, total_tokens: 3, prompt_tokens_details: { cached_tokens: 1 } });
          assert.equal(body.model, 'text-embedding-3-small', 'the model is the gateway\'s catalogue entry');
          assert.equal(body.object, 'list');
        }
      } finally {
        mock.replay = undefined;
      }
    });

    test('an item\'s members the gateway does not write go back with that item, in input order', async () => {
      const odd = Object.defineProperty({ object: 'embedding', index: 1, embedding: [0.25] }, '__proto__', { value: { k: 'ü' }, enumerable: true });
      mock.replay = { json: {
        object: 'list', model: 'm',
        data: [odd, { object: 'embedding', index: 0, embedding: [0.5, -0.25], score: 0.75, tokens: ['π', 2] }],
        usage: { prompt_tokens: 3, total_tokens: 3 },
      } };
      try {
        for (const encoding_format of ['float', 'base64'] as const) {
          const res = await post({ model: 'text-embedding-3-small', input: ['a', 'b'], encoding_format });
          assert.equal(res.status, 200);
          const body: any = JSON.parse(await res.text());
          const [first, second] = body.data;
          assert.deepEqual(Object.keys(first), ['object', 'index', 'score', 'tokens', 'embedding']);
          assert.deepEqual([first.index, first.score, first.tokens], [0, 0.75, ['π', 2]]);
          assert.deepEqual(Object.getOwnPropertyDescriptor(second, '__proto__')?.value, { k: 'ü' }, 'a "__proto__" item member is only a member');
          assert.equal(second.index, 1);
          assert.deepEqual(encoding_format === 'float' ? first.embedding : Array.from(decodeBase64(first.embedding)), [0.5, -0.25]);
        }
        // Items without other members are written as before.
        mock.replay = { json: { object: 'list', model: 'm', data: [{ object: 'embedding', index: 0, embedding: [1] }], usage: { prompt_tokens: 1, total_tokens: 1 } } };
        const plain: any = await (await post({ model: 'text-embedding-3-small', input: 'a', encoding_format: 'float' })).json();
        assert.deepEqual(plain.data, [{ object: 'embedding', index: 0, embedding: [1] }]);
      } finally {
        mock.replay = undefined;
      }
    });

    test('an activated self-hosted embedding model resolves normally', async () => {
      const res = await post({ model: 'bge-small', input: 'x' }, { 'gateway-trace': 'true' });
      assert.equal(res.status, 200);
      const body: any = await res.json();
      assert.equal(body.gateway.provider, 'selfhosted');
      assert.equal(open.requests.at(-1)!.headers.authorization, undefined, 'no_auth providers get no credential');
      const trace = await gw.traces.waitFor(body.gateway.request_id);
      assert.equal(trace.endpoint, 'embeddings');
      assert.equal(trace.prompt_tokens, body.usage.prompt_tokens);
      assert.equal(trace.cost_usd, body.gateway.cost_usd);
      assert.ok(trace.cost_usd > 0);
    });

    test('auto is rejected and nothing is routed', async () => {
      const n = mock.requests.length;
      const res = await post({ model: 'auto', input: 'x' });
      assert.equal(res.status, 400);
      assert.equal(((await res.json()) as any).error.code, 'invalid_request');
      assert.equal(mock.requests.length, n);
    });

    test('pre-tokenised input is rejected with tokenized_input_unsupported', async () => {
      for (const input of [[1, 2, 3], [[1, 2], [3]], 5]) {
        const res = await post({ model: 'text-embedding-3-small', input });
        assert.equal(res.status, 400);
        assert.equal(((await res.json()) as any).error.code, 'tokenized_input_unsupported');
      }
    });

    test('encoding_format other than float or base64 is 400 invalid_request', async () => {
      const res = await post({ model: 'text-embedding-3-small', input: 'x', encoding_format: 'hex' });
      assert.equal(res.status, 400);
      const err = ((await res.json()) as any).error;
      assert.equal(err.code, 'invalid_request');
      assert.equal(err.param, 'encoding_format');
    });

    test('bad inputs: empty array, non-strings, unknown model', async () => {
      for (const input of [[], ['a', 3], { text: 'a' }]) {
        const res = await post({ model: 'text-embedding-3-small', input });
        assert.equal(res.status, 400, JSON.stringify(input));
      }
      const res = await post({ model: 'nope-embed', input: 'x' });
      assert.equal(res.status, 404);
      assert.equal(((await res.json()) as any).error.code, 'model_not_found');
    });

    test('fewer vectors than inputs fails the whole call', async () => {
      mock.short = true;
      try {
        const res = await post({ model: 'text-embedding-3-small', input: ['a', 'b', 'c'] });
        assert.equal(res.status, 502);
        const body: any = await res.json();
        assert.equal(body.error.code, 'embeddings_incomplete');
        assert.equal(body.data, undefined);
      } finally { mock.short = false; }
    });

    test('the upstream\'s x-ratelimit-* headers reach the caller, as on chat', async () => {
      mock.replay = { headers: { 'x-ratelimit-remaining-requests': '77', 'x-ratelimit-remaining-tokens': '9990' }, json: {
        object: 'list', model: 'm', data: [{ object: 'embedding', index: 0, embedding: [1] }], usage: { prompt_tokens: 1, total_tokens: 1 },
      } };
      try {
        const res = await post({ model: 'text-embedding-3-small', input: 'x' });
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('x-ratelimit-remaining-requests'), '77');
        assert.equal(res.headers.get('x-ratelimit-remaining-tokens'), '9990');
      } finally { mock.replay = undefined; }
    });

    test('indexes that are not 0 to N-1, one each, fail the whole call: no input gets another input\'s vector', async () => {
      const answer = (indexes: number[]) => ({ json: {
        object: 'list', model: 'm', usage: { prompt_tokens: 2, total_tokens: 2 },
        data: indexes.map((index, k) => ({ object: 'embedding', index, embedding: [k + 0.5] })),
      } });
      try {
        for (const indexes of [[0, 0], [0, 7], [1, 1], [-1, 0]]) {
          mock.replay = answer(indexes);
          const res = await post({ model: 'text-embedding-3-small', input: ['apple', 'banana'] });
          assert.equal(res.status, 502, JSON.stringify(indexes));
          assert.equal(((await res.json()) as any).error.code, 'embeddings_incomplete');
        }
        // Numbered in reverse is still one each: the vectors come back in input order.
        mock.replay = answer([1, 0]);
        const res = await post({ model: 'text-embedding-3-small', input: ['apple', 'banana'] });
        assert.equal(res.status, 200);
        assert.deepEqual(((await res.json()) as any).data.map((d: any) => [d.index, d.embedding]), [[0, [1.5]], [1, [0.5]]]);
      } finally { mock.replay = undefined; }
    });
  });
}
