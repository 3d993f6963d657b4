// /v1/responses on the Anthropic and Gemini wire protocols: translated onto
// chat, then through each provider's chat adapter. The function-call tests
// replay each provider's documented tool-call answer.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startAnthropicMock, ANTHROPIC_MOCK_KEY } from './mocks/anthropic-mock.js';
import { startGeminiMock, GEMINI_MOCK_KEY, type GeminiMockUpstream } from './mocks/gemini-mock.js';
import type { MockUpstream } from './mocks/mock-server.js';
import { startGateway, type TestGateway } from './helpers/gateway.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

const tools: OpenAI.Responses.Tool[] = [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, strict: false }];

describe('responses API on the Anthropic and Gemini protocols', () => {
  let claude: MockUpstream;
  let gem: GeminiMockUpstream;
  let gw: TestGateway;
  let client: OpenAI;

  before(async () => {
    claude = await startAnthropicMock();
    gem = await startGeminiMock();
    gw = await startGateway({
      env: { SLUICE_T_ANTHROPIC: ANTHROPIC_MOCK_KEY, SLUICE_T_GEMINI: GEMINI_MOCK_KEY },
      config: {
        providers: {
          anthropic: { kind: 'anthropic', base_url: `${claude.url}/v1`, api_key_env: 'SLUICE_T_ANTHROPIC' },
          gemini: { kind: 'gemini', base_url: `${gem.url}/v1beta`, api_key_env: 'SLUICE_T_GEMINI' },
        },
        organizations: [{ id: 'acme', models: ['claude-sonnet-4-20250514', 'gemini-2.5-flash'] }],
      },
    });
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: await gw.key('acme'), maxRetries: 0 });
  });
  after(async () => { await gw.close(); await claude.close(); await gem.close(); });

  for (const model of ['claude-sonnet-4-20250514', 'gemini-2.5-flash']) {
    test(`${model}: create and stream, with instructions`, async () => {
      claude.replay = undefined;
      gem.replay = undefined;
      const r = await client.responses.create({ model, input: 'hello provider', instructions: 'Be kind.' });
      assert.equal(r.output_text, 'hello provider');
      assert.ok(r.usage!.total_tokens > 0);
      const s = client.responses.stream({ model, input: 'streamed hello provider' });
      for await (const _ of s) { /* drain */ }
      assert.equal((await s.finalResponse()).output_text, 'streamed hello provider');
    });
  }

  test('Anthropic tool_use becomes a function_call item', async () => {
    claude.replay = { json: {
      id: 'msg_01', type: 'message', role: 'assistant', model: 'claude-sonnet-4-20250514', stop_reason: 'tool_use', stop_sequence: null,
      content: [{ type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: { city: 'Rome' } }],
      usage: { input_tokens: 10, output_tokens: 5 },
    } };
    const r = await client.responses.create({ model: 'claude-sonnet-4-20250514', input: 'Weather in Rome?', tools });
    const call = r.output.find((o) => o.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
    assert.equal(call?.call_id, 'toolu_01');
    assert.deepEqual(JSON.parse(call.arguments), { city: 'Rome' });
  });

  test('Gemini functionCall becomes a function_call item', async () => {
    gem.replay = { json: {
      candidates: [{ content: { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Rome' } } }] }, finishReason: 'STOP', index: 0 }],
      usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
    } };
    const r = await client.responses.create({ model: 'gemini-2.5-flash', input: 'Weather in Rome?', tools });
    const call = r.output.find((o) => o.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
    assert.equal(call?.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.arguments), { city: 'Rome' });
  });
});
