// The translated path's output items follow the order the model wrote its
// parts in, and a streamed answer ends with the same output as the JSON one:
// the openai SDK's finalResponse() against create(), for the same upstream
// answer (Anthropic's and Gemini's), with the event stream checked as it goes.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startAnthropicMock, ANTHROPIC_MOCK_KEY } from './mocks/anthropic-mock.js';
import { startGeminiMock, GEMINI_MOCK_KEY, type GeminiMockUpstream } from './mocks/gemini-mock.js';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import type { MockUpstream, Transcript } from './mocks/mock-server.js';
import { startGateway, type TestGateway } from './helpers/gateway.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

const tools: OpenAI.Responses.Tool[] = [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, strict: false }];
const CLAUDE = 'claude-sonnet-4-20250514';
const GEMINI = 'gemini-2.5-flash';

/**
 * The output without our item ids, which differ from one response to the next,
 * and without the `parsed` members the SDK's finalResponse() adds.
 */
const withoutIds = (output: OpenAI.Responses.ResponseOutputItem[]) => JSON.parse(JSON.stringify(output.map(({ id: _id, ...rest }) => rest),
  (k, v) => (k === 'parsed' || k === 'parsed_arguments' ? undefined : v)));

/** Every event in order: sequence numbers rise by one, and an item's events come between its added and its done. */
function checkEvents(events: OpenAI.Responses.ResponseStreamEvent[]): void {
  assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i));
  const state = new Map<number, 'open' | 'done'>();
  for (const e of events) {
    if (!('output_index' in e)) continue;
    const at = e.output_index as number;
    if (e.type === 'response.output_item.added') {
      assert.equal(state.get(at), undefined, `output ${at} added twice`);
      assert.equal(at, state.size, 'items are added at the next output index');
      state.set(at, 'open');
    } else {
      assert.equal(state.get(at), 'open', `${e.type} on output ${at}, which is not open`);
      if (e.type === 'response.output_item.done') state.set(at, 'done');
    }
  }
  assert.ok([...state.values()].every((s) => s === 'done'));
}

describe('responses API: output order on the translated path', () => {
  let claude: MockUpstream;
  let gem: GeminiMockUpstream;
  let chat: OpenAIMock;
  let gw: TestGateway;
  let client: OpenAI;
  let chunked: OpenAI;

  before(async () => {
    claude = await startAnthropicMock();
    gem = await startGeminiMock();
    chat = await startOpenAIMock();
    gw = await startGateway({
      env: { SLUICE_T_ANTHROPIC: ANTHROPIC_MOCK_KEY, SLUICE_T_GEMINI: GEMINI_MOCK_KEY, SLUICE_T_CHAT: OPENAI_MOCK_KEY },
      config: {
        providers: {
          anthropic: { kind: 'anthropic', base_url: `${claude.url}/v1`, api_key_env: 'SLUICE_T_ANTHROPIC' },
          gemini: { kind: 'gemini', base_url: `${gem.url}/v1beta`, api_key_env: 'SLUICE_T_GEMINI' },
          up: { kind: 'openai', base_url: `${chat.url}/v1`, api_key_env: 'SLUICE_T_CHAT' },
        },
        models: [{ id: 'up-model', provider: 'up', context_window: 8_000, pricing: { prompt: 1, completion: 2 } }],
        organizations: [
          { id: 'acme', models: [CLAUDE, GEMINI, 'up-model'] },
          { id: 'chunked', models: ['up-model'], policy: { moderation: { mode: 'chunked', rules: [{ name: 'weapons', category: 'violence', terms: ['make a bomb'] }] } } },
        ],
      },
    });
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: await gw.key('acme'), maxRetries: 0 });
    chunked = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: await gw.key('chunked'), maxRetries: 0 });
  });
  after(async () => { await gw.close(); await claude.close(); await gem.close(); await chat.close(); });

  /** The same answer as JSON (create) and as a stream (finalResponse), each replayed once. */
  async function both(upstream: MockUpstream, model: string, json: Transcript, sse: Transcript) {
    upstream.script = [{ transcript: json }];
    const created = await client.responses.create({ model, input: 'Weather in Rome?', tools });
    upstream.script = [{ transcript: sse }];
    const s = client.responses.stream({ model, input: 'Weather in Rome?', tools });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const e of s) events.push(e);
    checkEvents(events);
    const streamed = await s.finalResponse();
    const completed = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
    assert.deepEqual(withoutIds(streamed.output), withoutIds(completed.response.output), 'the SDK builds what response.completed carries');
    return { created, streamed };
  }

  test('Anthropic: thinking, text, tool_use, text come back in that order, JSON and stream alike', async () => {
    const thinking = { type: 'thinking', thinking: 'Rome, then.', signature: 'sig-1' };
    const call = { type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: { city: 'Rome' } };
    const json = { json: {
      id: 'msg_01', type: 'message', role: 'assistant', model: CLAUDE, stop_reason: 'tool_use', stop_sequence: null,
      content: [thinking, { type: 'text', text: 'Let me check.' }, call, { type: 'text', text: 'One moment.' }],
      usage: { input_tokens: 10, output_tokens: 5 },
    } };
    const ev = (type: string, data: object) => ({ event: type, data: { type, ...data } });
    const sse = { sse: [
      ev('message_start', { message: { id: 'msg_02', type: 'message', role: 'assistant', model: CLAUDE, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } } }),
      ev('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }),
      ev('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: thinking.thinking } }),
      ev('content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: thinking.signature } }),
      ev('content_block_stop', { index: 0 }),
      ev('content_block_start', { index: 1, content_block: { type: 'text', text: '' } }),
      ev('content_block_delta', { index: 1, delta: { type: 'text_delta', text: 'Let me ' } }),
      ev('content_block_delta', { index: 1, delta: { type: 'text_delta', text: 'check.' } }),
      ev('content_block_stop', { index: 1 }),
      ev('content_block_start', { index: 2, content_block: { ...call, input: {} } }),
      ev('content_block_delta', { index: 2, delta: { type: 'input_json_delta', partial_json: '{"city":"Rome"}' } }),
      ev('content_block_stop', { index: 2 }),
      ev('content_block_start', { index: 3, content_block: { type: 'text', text: '' } }),
      ev('content_block_delta', { index: 3, delta: { type: 'text_delta', text: 'One moment.' } }),
      ev('content_block_stop', { index: 3 }),
      ev('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 5 } }),
      ev('message_stop', {}),
    ] };
    const { created, streamed } = await both(claude, CLAUDE, json, sse);
    assert.deepEqual(created.output.map((o) => o.type), ['reasoning', 'message', 'function_call', 'message']);
    assert.deepEqual(withoutIds(streamed.output), withoutIds(created.output));
    assert.equal(created.output_text, 'Let me check.One moment.');

    // Replayed as input, the interleaved turn is still one assistant turn before its tool result.
    const output = { type: 'function_call_output' as const, call_id: 'toolu_01', output: '18 C' };
    await client.responses.create({ model: CLAUDE, tools, input: [{ role: 'user', content: 'Weather in Rome?' }, ...created.output, output] as OpenAI.Responses.ResponseInput });
    const sent = claude.requests.at(-1)!.body.messages;
    assert.deepEqual(sent.map((m: any) => m.role), ['user', 'assistant', 'user']);
    assert.deepEqual(sent[1].content.map((b: any) => b.type), ['thinking', 'text', 'tool_use']);
    assert.equal(sent[1].content[1].text, 'Let me check.One moment.');
  });

  test('Gemini: text, functionCall, text come back in that order, JSON and stream alike, parts in one chunk or apart', async () => {
    const call = { functionCall: { name: 'get_weather', args: { city: 'Rome' } }, thoughtSignature: 'gsig' };
    const usageMetadata = { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 };
    const parts = [{ text: 'Rome, then.', thought: true }, { text: 'Let me check.' }, call, { text: 'One moment.' }];
    const json = { json: { candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }], usageMetadata, responseId: 'r1' } };
    const apart = { sse: parts.map((p, i) => ({ data: {
      candidates: [{ content: { role: 'model', parts: [p] }, index: 0, ...(i === parts.length - 1 ? { finishReason: 'STOP' } : {}) }],
      ...(i === parts.length - 1 ? { usageMetadata } : {}), responseId: 'r1',
    } })) };
    const together = { sse: [{ data: json.json }] };
    for (const sse of [apart, together]) {
      const { created, streamed } = await both(gem, GEMINI, json, sse);
      assert.deepEqual(created.output.map((o) => o.type), ['reasoning', 'message', 'function_call', 'message']);
      assert.deepEqual(withoutIds(streamed.output), withoutIds(created.output));
    }
  });

  // Under chunked moderation too: where the choice moves from text to a call and back, what the windows of
  // the kind it leaves hold goes first (until 2026-11-29 a call's held arguments came after the text that
  // followed it, on an item that text had closed).
  for (const org of ['acme', 'chunked'] as const) {
    test(`a plain chat stream with text before and after its tool calls: items in that order, and valid events (${org})`, async () => {
      const c = (delta: object, finish: string | null = null) => ({ data: { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'up-model', choices: [{ index: 0, delta, finish_reason: finish }] } });
      chat.script = [{ transcript: { sse: [
        c({ role: 'assistant', content: 'Let me check.' }),
        c({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":' } }] }),
        c({ tool_calls: [{ index: 0, function: { arguments: '"Rome"}' } }] }),
        c({ content: 'One moment.' }),
        c({}, 'tool_calls'),
        { data: '[DONE]' },
      ] } }];
      const s = (org === 'acme' ? client : chunked).responses.stream({ model: 'up-model', input: 'Weather in Rome?', tools });
      const events: OpenAI.Responses.ResponseStreamEvent[] = [];
      for await (const e of s) events.push(e);
      checkEvents(events);
      const r = await s.finalResponse();
      assert.deepEqual(r.output.map((o) => o.type), ['message', 'function_call', 'message']);
      assert.deepEqual(r.output.flatMap((o) => (o.type === 'message' ? o.content.map((p) => (p.type === 'output_text' ? p.text : '')) : [])), ['Let me check.', 'One moment.']);
      assert.equal((r.output[1] as OpenAI.Responses.ResponseFunctionToolCall).arguments, '{"city":"Rome"}');
      assert.deepEqual(withoutIds(r.output), withoutIds((events.at(-1) as OpenAI.Responses.ResponseCompletedEvent).response.output));
    });
  }
});
