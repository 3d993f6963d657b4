// Anthropic and Gemini through the gateway, with the openai SDK as the client:
// the caller speaks OpenAI, each upstream hears its own documented wire format.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startAnthropicMock, ANTHROPIC_MOCK_KEY } from './mocks/anthropic-mock.js';
import { startGeminiMock, GEMINI_MOCK_KEY, type GeminiMockUpstream } from './mocks/gemini-mock.js';
import type { MockUpstream } from './mocks/mock-server.js';
import { HTTP_KINDS, startGateway, type TestGateway } from './helpers/gateway.js';
import { readSse } from './helpers/fixtures.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

for (const http of HTTP_KINDS) {
  describe(`Anthropic and Gemini adapters over ${http}`, () => {
    let claude: MockUpstream;
    let gem: GeminiMockUpstream;
    let gw: TestGateway;
    let client: OpenAI;
    let key: string;

    before(async () => {
      claude = await startAnthropicMock();
      gem = await startGeminiMock();
      gw = await startGateway({
        http,
        env: { SLUICE_T_ANTHROPIC: ANTHROPIC_MOCK_KEY, SLUICE_T_GEMINI: GEMINI_MOCK_KEY },
        config: {
          providers: {
            anthropic: { kind: 'anthropic', base_url: `${claude.url}/v1`, api_key_env: 'SLUICE_T_ANTHROPIC' },
            gemini: { kind: 'gemini', base_url: `${gem.url}/v1beta`, api_key_env: 'SLUICE_T_GEMINI' },
            google: { kind: 'gemini', base_url: `${gem.url}/v1beta`, api_key_env: 'SLUICE_T_GEMINI' },
          },
          organizations: [{ id: 'acme', models: ['claude-sonnet-4-20250514', 'gemini-2.5-flash'] }],
        },
      });
      key = await gw.key('acme');
      client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
    });
    after(async () => { await gw.close(); await claude.close(); await gem.close(); });

    for (const [label, model] of [['anthropic', 'claude-sonnet-4-20250514'], ['gemini', 'gemini-2.5-flash']] as const) {
      test(`${label}: chat through the SDK`, async () => {
        const r = await client.chat.completions.create({ model, messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hello from sluice' }] });
        assert.equal(r.choices[0]!.message.content, 'hello from sluice');
        assert.equal(r.choices[0]!.finish_reason, 'stop');
        assert.equal(r.model, model);
        assert.ok(r.usage!.prompt_tokens > 0 && r.usage!.completion_tokens > 0);
        const sent = (label === 'anthropic' ? claude : gem).requests.at(-1)!;
        if (label === 'anthropic') {
          assert.equal(sent.body.system, 'be brief');
          assert.equal(sent.headers['x-api-key'], ANTHROPIC_MOCK_KEY);
        } else {
          assert.deepEqual(sent.body.systemInstruction.parts, [{ text: 'be brief' }]);
          assert.equal(sent.headers['x-goog-api-key'], GEMINI_MOCK_KEY);
        }
      });

      test(`${label}: stream through the SDK, usage on the final chunk`, async () => {
        const stream = await client.chat.completions.create({ model, stream: true, messages: [{ role: 'user', content: 'alpha beta gamma delta' }] });
        let text = '';
        let last: any;
        for await (const c of stream) { text += c.choices[0]?.delta.content ?? ''; last = c; }
        assert.equal(text, 'alpha beta gamma delta');
        assert.ok(last.usage.completion_tokens > 0);
      });

      test(`${label}: a provider error event mid-stream becomes the SSE error event`, async () => {
        const mock = label === 'anthropic' ? claude : gem;
        mock.fault = 'error-event-mid-stream';
        try {
          const res = await fetch(`${gw.url}/v1/chat/completions`, {
            method: 'POST', headers: { authorization: `Bearer ${key}` },
            body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'one two three four five' }] }),
          });
          assert.equal(res.status, 200);
          const events = await readSse(res);
          assert.match(events.at(-1)!, /^event: error\ndata: .*"code":"upstream_error"/);
          const trace = await gw.traces.waitFor(res.headers.get('x-request-id')!);
          assert.equal(trace.stream_aborted, true);
        } finally { mock.fault = 'none'; }
      });
    }

    test('anthropic: embeddings are refused with embeddings_unsupported', async () => {
      await assert.rejects(client.embeddings.create({ model: 'claude-sonnet-4-20250514', input: 'x' }),
        (e: any) => e.status === 400 && e.code === 'embeddings_unsupported');
    });

    test('gemini embeddings (google catalogue): float and base64 carry identical values, in input order', async () => {
      const input = ['first text', 'second, longer text', 'third'];
      const float = await client.embeddings.create({ model: 'gemini-embedding-001', input, encoding_format: 'float' });
      const b64 = await fetch(`${gw.url}/v1/embeddings`, {
        method: 'POST', headers: { authorization: `Bearer ${key}` },
        body: JSON.stringify({ model: 'gemini-embedding-001', input, encoding_format: 'base64' }),
      }).then((r) => r.json() as Promise<any>);
      assert.equal(float.data.length, 3);
      float.data.forEach((item, i) => {
        assert.equal(item.index, i);
        const decoded = Array.from(new Float32Array(new Uint8Array(Buffer.from(b64.data[i].embedding, 'base64')).buffer));
        assert.deepEqual(decoded, item.embedding.map((v) => Math.fround(v)));
      });
      assert.ok(float.usage.prompt_tokens > 0, 'Gemini reports no tokens for embeddings; the gateway estimates');
      const sent = gem.requests.at(-1)!;
      assert.match(sent.url, /batchEmbedContents/);
      assert.equal(gem.requests.at(-1)!.body.requests[0].content.parts[0].text, 'first text');
    });

    test('gemini embeddings: a field Gemini cannot send is a 400 naming it, and nothing is sent; user is dropped', async () => {
      const before = gem.requests.length;
      await assert.rejects(client.embeddings.create({ model: 'gemini-embedding-001', input: 'x', truncate_prompt_tokens: 8 } as any),
        (e: any) => e.status === 400 && e.code === 'invalid_request' && e.param === 'truncate_prompt_tokens' && /Gemini/.test(e.message));
      assert.equal(gem.requests.length, before);
      await client.embeddings.create({ model: 'gemini-embedding-001', input: 'x', user: 'u-1' });
      assert.equal(gem.requests.length, before + 1);
    });

    test('gemini embeddings: dimensions reaches outputDimensionality; a short batch fails whole', async () => {
      await client.embeddings.create({ model: 'text-embedding-004', input: ['a', 'b'], dimensions: 4 });
      assert.equal(gem.requests.at(-1)!.body.requests[0].outputDimensionality, 4);
      gem.missingEmbeddings = 1;
      try {
        await assert.rejects(client.embeddings.create({ model: 'text-embedding-004', input: ['a', 'b'] }),
          (e: any) => e.status === 502 && e.code === 'embeddings_incomplete');
      } finally { gem.missingEmbeddings = 0; }
    });
  });
}
