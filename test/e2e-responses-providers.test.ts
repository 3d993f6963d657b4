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

  test('Anthropic signed thinking rides on the reasoning item and goes back before the tool_use, by item list and by previous_response_id, JSON and stream', async () => {
    const model = 'claude-sonnet-4-20250514';
    const thinking = { type: 'thinking', thinking: 'The user wants Rome.', signature: 'sig-Abc123==' };
    const redacted = { type: 'redacted_thinking', data: 'opaque-redacted' };
    const json = { json: {
      id: 'msg_02', type: 'message', role: 'assistant', model, stop_reason: 'tool_use', stop_sequence: null,
      content: [thinking, redacted, { type: 'tool_use', id: 'toolu_02', name: 'get_weather', input: { city: 'Rome' } }],
      usage: { input_tokens: 10, output_tokens: 5 },
    } };
    const ev = (type: string, data: object) => ({ event: type, data: { type, ...data } });
    const sse = { sse: [
      ev('message_start', { message: { id: 'msg_03', type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } } }),
      ev('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }),
      ev('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: thinking.thinking } }),
      ev('content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: thinking.signature } }),
      ev('content_block_stop', { index: 0 }),
      ev('content_block_start', { index: 1, content_block: redacted }),
      ev('content_block_stop', { index: 1 }),
      ev('content_block_start', { index: 2, content_block: { type: 'tool_use', id: 'toolu_02', name: 'get_weather', input: {} } }),
      ev('content_block_delta', { index: 2, delta: { type: 'input_json_delta', partial_json: '{"city":"Rome"}' } }),
      ev('content_block_stop', { index: 2 }),
      ev('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 5 } }),
      ev('message_stop', {}),
    ] };
    for (const stream of [false, true]) {
      claude.replay = stream ? sse : json;
      const first = { model, input: 'Weather in Rome?', tools, reasoning: { effort: 'low' as const } };
      let r: OpenAI.Responses.Response;
      if (stream) {
        const s = client.responses.stream(first);
        for await (const _ of s) { /* drain */ }
        r = await s.finalResponse();
      } else {
        r = await client.responses.create(first);
      }
      claude.replay = undefined;
      const reasoning = r.output.find((o) => o.type === 'reasoning') as OpenAI.Responses.ResponseReasoningItem;
      assert.equal(typeof reasoning?.encrypted_content, 'string', `stream ${stream}: the signed blocks are carried`);
      assert.ok(!reasoning.encrypted_content!.includes('sig-Abc123'), 'opaque to the caller');
      const call = r.output.find((o) => o.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
      const output = { type: 'function_call_output' as const, call_id: call.call_id, output: '18 C' };
      const expected = [thinking, redacted, { type: 'tool_use', id: 'toolu_02', name: 'get_weather', input: { city: 'Rome' } }];
      // The caller's own item list, as the SDK returned it.
      await client.responses.create({ model, tools, input: [{ role: 'user', content: 'Weather in Rome?' }, ...r.output, output] as OpenAI.Responses.ResponseInput });
      assert.deepEqual(claude.requests.at(-1)!.body.messages[1], { role: 'assistant', content: expected }, `stream ${stream}: by item list`);
      // The stored conversation.
      await client.responses.create({ model, tools, previous_response_id: r.id, input: [output] });
      assert.deepEqual(claude.requests.at(-1)!.body.messages[1], { role: 'assistant', content: expected }, `stream ${stream}: by previous_response_id`);
    }
  });

  test('a Gemini thought signature rides on the function_call item and goes back on the functionCall part', async () => {
    const model = 'gemini-2.5-flash';
    gem.replay = { json: {
      candidates: [{ content: { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Rome' } }, thoughtSignature: 'gsig-xyz' }] }, finishReason: 'STOP', index: 0 }],
      usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
    } };
    const r = await client.responses.create({ model, input: 'Weather in Rome?', tools });
    gem.replay = undefined;
    const call = r.output.find((o) => o.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall & { extra_content?: unknown };
    assert.deepEqual(call.extra_content, { google: { thought_signature: 'gsig-xyz' } });
    await client.responses.create({ model, tools, input: [{ role: 'user', content: 'Weather in Rome?' }, ...r.output, { type: 'function_call_output', call_id: call.call_id, output: '18 C' }] as OpenAI.Responses.ResponseInput });
    const parts = gem.requests.at(-1)!.body.contents[1].parts;
    assert.deepEqual(parts, [{ functionCall: { name: 'get_weather', args: { city: 'Rome' } }, thoughtSignature: 'gsig-xyz' }]);
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
  test('a 400 from the chat translation names the field as the Responses request has it, not its chat twin', async () => {
    const refused = async (body: Record<string, unknown>, param: string, stream = false) => {
      const asked = gem.requests.length;
      await assert.rejects(client.responses.create({ ...body, ...(stream ? { stream: true } : {}) } as any), (e: any) => {
        assert.equal(e.status, 400, e.message);
        assert.equal(e.param, param, e.message);
        assert.ok(!/\b(messages|max_tokens|reasoning_effort|response_format)\b/.test(e.message), e.message);
        return true;
      });
      assert.equal(gem.requests.length, asked, 'refused before the upstream is asked');
    };
    const gemini = 'gemini-2.5-flash';
    await refused({ model: gemini, input: 'hi', reasoning: { effort: 'xhigh' } }, 'reasoning.effort');
    await refused({ model: gemini, input: 'hi', reasoning: { effort: 'xhigh' } }, 'reasoning.effort', true);
    await refused({ model: gemini, input: 'hi', text: { format: { type: 'json_schema', name: 'x', schema: { type: 'object', properties: { a: { type: 'nonsense' } } } } } }, 'text.format.schema.properties.a.type');
    await refused({ model: gemini, input: 'hi', tools: [{ type: 'function', name: 'f', parameters: { type: 'object', properties: { a: { type: 'nonsense' } } }, strict: false }] }, 'tools.0.parameters.properties.a.type');
    // An answer to a call nobody made: named by its item, after a system item and a user turn.
    await refused({ model: gemini, instructions: 'Be brief.', input: [{ role: 'user', content: 'hi' }, { type: 'function_call_output', call_id: 'call_nobody', output: 'x' }] }, 'input.1');
  });
});
