// The Anthropic adapter against a mock Messages API over real HTTP: the adapter's
// requests are sent with undici and its stream translator fed by an SSE parser.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ChatMessage, ChatRequest, UpstreamRequest, UpstreamTarget } from '../src/domain.js';
import { GatewayError } from '../src/errors.js';
import { anthropic } from '../src/providers/anthropic/index.js';
import { DEFAULT_MAX_TOKENS, THINKING_BUDGET } from '../src/providers/anthropic/request.js';
import { passHeaders } from '../src/providers/anthropic/headers.js';
import { finishReason } from '../src/providers/anthropic/response.js';
import { readdirSync, readFileSync } from 'node:fs';
import { ANTHROPIC_MOCK_KEY, startAnthropicMock } from './mocks/anthropic-mock.js';
import type { MockUpstream } from './mocks/mock-server.js';
import { chatFor, deltaText as text, send, streamThrough } from './helpers/upstream-call.js';
import { headOf } from './helpers/answer-head.js';

const PROMPT = 'the quick brown fox jumps over the lazy dog';

let mock: MockUpstream;
before(async () => { mock = await startAnthropicMock(); });
after(() => mock.close());

/** `null` sends no credential at all. */
const target = (apiKey: string | null = ANTHROPIC_MOCK_KEY): UpstreamTarget =>
  ({ provider: 'anthropic', kind: 'anthropic', baseUrl: `${mock.url}/v1`, model: 'claude-sonnet-4-20250514', apiKey: apiKey ?? undefined });

const chat = chatFor('claude-sonnet');
const stream = (up: UpstreamRequest) => streamThrough(anthropic, up);

describe('anthropic adapter', () => {
  it('translates a chat request and its JSON answer', async () => {
    mock.fault = 'none';
    const up = anthropic.chatRequest(target(), chat([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: PROMPT }], { temperature: 0.5, top_p: 1, user: 'u-1' }));
    const res = await send(up);
    assert.equal(res.status, 200);
    const result = anthropic.chatResponse(JSON.parse(res.text));
    assert.equal(result.object, 'chat.completion');
    assert.deepEqual(result.choices[0]!.message, { role: 'assistant', content: PROMPT, refusal: null });
    assert.equal(result.choices[0]!.finish_reason, 'stop');
    assert.deepEqual(result.usage, { prompt_tokens: 11, completion_tokens: 9, total_tokens: 20, prompt_tokens_details: { cached_tokens: 0, cache_creation_tokens: 0 } });

    const sent = mock.requests.at(-1)!;
    assert.equal(sent.url, '/v1/messages');
    assert.equal(sent.headers['anthropic-version'], '2023-06-01');
    assert.equal(sent.body.system, 'Be brief.');
    assert.deepEqual(sent.body.messages, [{ role: 'user', content: [{ type: 'text', text: PROMPT }] }]);
    assert.equal(sent.body.max_tokens, DEFAULT_MAX_TOKENS);
    assert.equal(sent.body.temperature, 0.5);
    assert.equal(sent.body.top_p, undefined);
    assert.deepEqual(sent.body.metadata, { user_id: 'u-1' });
  });

  it('maps max_tokens and stop, and merges consecutive turns and text parts', async () => {
    const up = anthropic.chatRequest(target(), chat([
      { role: 'system', content: 'One.' },
      { role: 'developer', content: 'Two.' },
      { role: 'user', content: 'first' },
      { role: 'user', content: [{ type: 'text', text: 'one two three four' }] },
    ], { max_tokens: 2, stop: 'END', top_p: 0.9 }));
    const result = anthropic.chatResponse(JSON.parse((await send(up)).text));
    assert.equal(result.choices[0]!.finish_reason, 'length');
    const sent = mock.requests.at(-1)!.body;
    assert.equal(sent.system, 'One.\n\nTwo.');
    assert.deepEqual(sent.messages, [{ role: 'user', content: [{ type: 'text', text: 'first' }, { type: 'text', text: 'one two three four' }] }]);
    assert.deepEqual(sent.stop_sequences, ['END']);
    assert.equal(sent.top_p, 0.9);
  });

  it('sends cache_control marks on system, user, tool-result and image parts and on tools; refuses other part and tool members', async () => {
    const mark = { type: 'ephemeral' };
    const long = { type: 'ephemeral', ttl: '1h' };
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: {} } }, cache_control: mark }];
    const messages: ChatMessage[] = [
      { role: 'system', content: [{ type: 'text', text: 'A long, stable preamble.', cache_control: long }] },
      { role: 'developer', content: 'Unmarked.' },
      { role: 'user', content: [{ type: 'text', text: 'see', cache_control: mark }, { type: 'image_url', image_url: { url: 'https://x/a.png' }, cache_control: mark }] },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: [{ type: 'text', text: 'sunny', cache_control: mark }] },
    ];
    const up = anthropic.chatRequest(target(), chat(messages, { raw: { tools } }));
    assert.equal((await send(up)).status, 200);
    const sent = mock.requests.at(-1)!.body;
    // A marked system block keeps its place: system goes as blocks, the mark on its own.
    assert.deepEqual(sent.system, [{ type: 'text', text: 'A long, stable preamble.', cache_control: long }, { type: 'text', text: 'Unmarked.' }]);
    assert.deepEqual(sent.messages[0].content, [
      { type: 'text', text: 'see', cache_control: mark },
      { type: 'image', source: { type: 'url', url: 'https://x/a.png' }, cache_control: mark },
    ]);
    assert.deepEqual(sent.messages[2].content[0].content, [{ type: 'text', text: 'sunny', cache_control: mark }]);
    assert.deepEqual(sent.tools[0].cache_control, mark);

    const refusedWith = (msgs: ChatMessage[], raw: Record<string, unknown>, param: string) => assert.throws(
      () => anthropic.chatRequest(target(), chat(msgs, { raw })),
      (err: unknown) => err instanceof GatewayError && err.code === 'invalid_request' && err.param === param,
      param,
    );
    const part = (extra: Record<string, unknown>): ChatMessage[] => [{ role: 'user', content: [{ type: 'text', text: 'hi', ...extra }] }];
    refusedWith(part({ cache_control: { type: 'forever' } }), {}, 'messages.0.content.0.cache_control');
    refusedWith(part({ cache_control: 'ephemeral' }), {}, 'messages.0.content.0.cache_control');
    refusedWith(part({ citations: true }), {}, 'messages.0.content.0.citations');
    refusedWith(part({ constructor: 1 }), {}, 'messages.0.content.0.constructor');
    refusedWith(part({}), { tools: [{ ...tools[0], cache_control: { type: 'x' } }] }, 'tools.0.cache_control');
    refusedWith(part({}), { tools: [{ ...tools[0], defer_loading: true }] }, 'tools.0.defer_loading');
    // Without a mark, system is one string, as before.
    const plain = JSON.parse(anthropic.chatRequest(target(), chat([{ role: 'system', content: [{ type: 'text', text: 'A.' }] }, { role: 'system', content: 'B.' }, { role: 'user', content: 'hi' }])).body);
    assert.equal(plain.system, 'A.\n\nB.');
  });

  it('translates tools, tool_choice and parallel_tool_calls', () => {
    const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] } } }];
    const body = (raw: Record<string, unknown>) => JSON.parse(anthropic.chatRequest(target(), chat([{ role: 'user', content: 'hi' }], { raw: { tools, ...raw } })).body);
    const b = body({ tool_choice: 'required', parallel_tool_calls: false });
    assert.deepEqual(b.tools, [{ name: 'get_weather', description: 'Weather', input_schema: tools[0]!.function.parameters }]);
    assert.deepEqual(b.tool_choice, { type: 'any', disable_parallel_tool_use: true });
    assert.deepEqual(body({}).tool_choice, { type: 'auto' });
    assert.deepEqual(body({ tool_choice: 'none' }).tool_choice, { type: 'none' });
    assert.deepEqual(body({ tool_choice: { type: 'function', function: { name: 'get_weather' } } }).tool_choice, { type: 'tool', name: 'get_weather' });
    // The SDKs' structured-output helpers always send strict; Claude has no switch for it, so it is accepted and not sent.
    const strict = JSON.parse(anthropic.chatRequest(target(), chat([{ role: 'user', content: 'hi' }], { raw: { tools: [{ ...tools[0], function: { ...tools[0]!.function, strict: true } }] } })).body);
    assert.deepEqual(strict.tools, b.tools);
  });

  it('turns assistant tool calls into tool_use blocks and tool messages into leading tool_result blocks', () => {
    const sent = JSON.parse(anthropic.chatRequest(target(), chat([
      { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }, { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } }] },
      { role: 'assistant', content: 'Checking.', reasoning_content: 'hmm', reasoning: 'hmm', thinking_blocks: [{ type: 'thinking', thinking: 'hmm', signature: 'sig' }], tool_calls: [
        { id: 'toolu_1', type: 'function', function: { name: 'a', arguments: '{"x":1}' } },
        { id: 'toolu_2', type: 'function', function: { name: 'b', arguments: '' } },
      ] },
      { role: 'tool', tool_call_id: 'toolu_1', content: 'one' },
      { role: 'tool', tool_call_id: 'toolu_2', content: [{ type: 'text', text: 'two' }] },
      { role: 'user', content: 'and then?' },
    ])).body);
    assert.deepEqual(sent.messages, [
      { role: 'user', content: [
        { type: 'text', text: 'look' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
        { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
      ] },
      { role: 'assistant', content: [
        { type: 'thinking', thinking: 'hmm', signature: 'sig' },
        { type: 'text', text: 'Checking.' },
        { type: 'tool_use', id: 'toolu_1', name: 'a', input: { x: 1 } },
        { type: 'tool_use', id: 'toolu_2', name: 'b', input: {} },
      ] },
      { role: 'user', content: [
        { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'one' }] },
        { type: 'tool_result', tool_use_id: 'toolu_2', content: [{ type: 'text', text: 'two' }] },
        { type: 'text', text: 'and then?' },
      ] },
    ]);
  });

  it('emulates json_schema with one forced tool, and maps reasoning_effort to a thinking budget', () => {
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false };
    const b = JSON.parse(anthropic.chatRequest(target(), chat([{ role: 'user', content: 'hi' }], { raw: { response_format: { type: 'json_schema', json_schema: { name: 'w', schema } } } })).body);
    assert.deepEqual(b.tools, [{ name: 'sluice_json_response', description: 'Answer with JSON matching this schema.', input_schema: schema }]);
    assert.deepEqual(b.tool_choice, { type: 'tool', name: 'sluice_json_response' });
    const t = JSON.parse(anthropic.chatRequest(target(), chat([{ role: 'user', content: 'hi' }], { raw: { reasoning_effort: 'medium' } })).body);
    assert.deepEqual(t.thinking, { type: 'enabled', budget_tokens: THINKING_BUDGET.medium });
    assert.equal(t.max_tokens, THINKING_BUDGET.medium! + DEFAULT_MAX_TOKENS);
    // The forced tool's input comes back as the message content, finishing as a normal stop.
    const r = anthropic.chatResponse({ content: [{ type: 'tool_use', id: 't', name: 'sluice_json_response', input: { city: 'Paris' } }], stop_reason: 'tool_use', usage: {} });
    assert.equal(r.choices[0]!.message.content, '{"city":"Paris"}');
    assert.equal(r.choices[0]!.message.tool_calls, undefined);
    assert.equal(r.choices[0]!.finish_reason, 'stop');
  });

  it('refuses what it cannot honour, naming the field', () => {
    const refused = (req: ChatRequest, param: string) => assert.throws(() => anthropic.chatRequest(target(), req),
      (err: unknown) => err instanceof GatewayError && err.code === 'invalid_request' && err.param === param);
    const user: ChatMessage = { role: 'user', content: 'hi' };
    const tools = [{ type: 'function', function: { name: 'f' } }];
    refused(chat([user], { temperature: 1.5 }), 'temperature');
    refused(chat([user], { raw: { n: 2 } }), 'n');
    refused(chat([user], { raw: { seed: 7 } }), 'seed');
    refused(chat([user], { raw: { presence_penalty: 0.5 } }), 'presence_penalty');
    refused(chat([user], { raw: { logprobs: true } }), 'logprobs');
    refused(chat([user], { raw: { a_field_from_the_future: 1 } }), 'a_field_from_the_future');
    // Names an object's prototype has are unknown efforts, not the budget table's entries.
    refused(chat([user], { raw: { reasoning_effort: 'constructor' } }), 'reasoning_effort');
    refused(chat([user], { raw: { reasoning_effort: 'toString' } }), 'reasoning_effort');
    refused(chat([user], { raw: { tools: [{ type: 'web_search' }] } }), 'tools.0.type');
    refused(chat([user], { raw: { tools: [{ type: 'function', function: { name: 'f', examples: [] } }] } }), 'tools.0.function.examples');
    refused(chat([user], { raw: { tools, response_format: { type: 'json_object' } } }), 'response_format');
    refused(chat([user], { raw: { tools, tool_choice: 'required', reasoning_effort: 'low' } }), 'tool_choice');
    refused(chat([user], { max_tokens: 100, raw: { reasoning_effort: 'low', max_tokens: 100 } }), 'max_tokens');
    refused(chat([user], { temperature: 0.2, raw: { reasoning_effort: 'low' } }), 'temperature');
    refused(chat([user], { temperature: 0.2, top_p: 0.5 }), 'top_p');
    refused(chat([{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }] }]), 'messages.0.content.0.type');
    refused(chat([user, { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{nope' } }] }]), 'messages.1.tool_calls.0.function.arguments');
    refused(chat([user, { role: 'tool', content: 'r' }]), 'messages.1.tool_call_id');
    refused(chat([{ role: 'system', content: 'only a system prompt' }]), 'messages');
    // Harmless fields and default values pass.
    assert.doesNotThrow(() => anthropic.chatRequest(target(), chat([user], { raw: { store: false, metadata: { a: 'b' }, seed: null, presence_penalty: 0, logprobs: false, n: 1, stream_options: { include_usage: true } } })));
  });

  it('translates a stream event by event, with usage before done', async () => {
    const { events, cut } = await stream(anthropic.chatRequest(target(), chat([{ role: 'user', content: PROMPT }], { stream: true })));
    assert.equal(cut, undefined);
    const chunks = events.filter((e) => e.type === 'chunk').map((e) => (e as { chunk: any }).chunk);
    assert.deepEqual(chunks[0].choices[0].delta, { role: 'assistant', content: '' });
    assert.equal(text(events), PROMPT);
    assert.equal(chunks.at(-2).choices[0].finish_reason, 'stop');
    assert.deepEqual(chunks.at(-1), { choices: [], usage: { prompt_tokens: 9, completion_tokens: 9, total_tokens: 18, prompt_tokens_details: { cached_tokens: 0, cache_creation_tokens: 0 } } });
    assert.deepEqual(events.at(-1), { type: 'done' });
  });

  it('turns a mid-stream error event into an error StreamEvent, and never reports done for a cut stream', async () => {
    mock.fault = 'error-event-mid-stream';
    try {
      const { events } = await stream(anthropic.chatRequest(target(), chat([{ role: 'user', content: PROMPT }], { stream: true })));
      assert.deepEqual(events.at(-1), {
        type: 'error', message: 'Overloaded',
        upstream: { status: 529, details: { message: 'Overloaded', type: 'overloaded_error', param: null, code: null } },
      });
      assert.equal(text(events), 'the quick ');
      assert.ok(!events.some((e) => e.type === 'done'));
    } finally { mock.fault = 'none'; }
    mock.fault = 'drop-mid-stream';
    try {
      const { events, cut } = await stream(anthropic.chatRequest(target(), chat([{ role: 'user', content: PROMPT }], { stream: true })));
      assert.ok(cut);
      assert.ok(!events.some((e) => e.type === 'done'));
    } finally { mock.fault = 'none'; }
  });

  it('fails a stream at a content block with no OpenAI form, as the JSON answer fails, rather than drop it', () => {
    const t = anthropic.streamTranslator();
    const ev = (type: string, body: object) => t.event(type, JSON.stringify({ type, ...body }));
    ev('message_start', { message: { usage: { input_tokens: 3, output_tokens: 0 } } });
    assert.deepEqual(ev('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }), []);
    assert.deepEqual(ev('content_block_start', { index: 1, content_block: { type: 'text', text: '' } }), []);
    const block = { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: {} };
    const message = 'The upstream answered with a "server_tool_use" content block, which has no OpenAI form.';
    assert.deepEqual(ev('content_block_start', { index: 2, content_block: block }), [{ type: 'error', message }]);
    assert.throws(() => anthropic.chatResponse({ content: [{ type: 'text', text: 'hi' }, block] }), (e: unknown) => e instanceof GatewayError && e.message === message);
  });

  it('streams a tool call with no arguments as "{}", as its JSON answer reads (it streamed "", which JSON.parse refuses)', () => {
    const t = anthropic.streamTranslator();
    const ev = (type: string, body: object) => t.event(type, JSON.stringify({ type, ...body }));
    const args = (events: ReturnType<typeof ev>) => events.flatMap((e) => (e.type === 'chunk' ? e.chunk.choices.flatMap((c) => c.delta?.tool_calls ?? []) : []))
      .map((c) => c.function?.arguments ?? '').join('');
    ev('message_start', { message: { usage: { input_tokens: 3, output_tokens: 0 } } });
    const streamed: string[] = [];
    for (const [index, id, fragments] of [[0, 'toolu_1', ['']], [1, 'toolu_2', []], [2, 'toolu_3', ['{"a":', '1}']]] as const) {
      let all = args(ev('content_block_start', { index, content_block: { type: 'tool_use', id, name: 'f', input: {} } }));
      for (const partial of fragments) all += args(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: partial } }));
      all += args(ev('content_block_stop', { index }));
      streamed.push(all);
    }
    assert.deepEqual(streamed, ['{}', '{}', '{"a":1}']);
    const json = anthropic.chatResponse({ content: [{ type: 'tool_use', id: 'toolu_1', name: 'f', input: {} }], stop_reason: 'tool_use', usage: {} });
    assert.equal(json.choices[0]!.message.tool_calls![0]!.function.arguments, streamed[0]);
  });

  it('extracts Anthropic error details: bad credential and upstream failure', async () => {
    for (const key of ['wrong-key', null]) {
      const res = await send(anthropic.chatRequest(target(key), chat([{ role: 'user', content: PROMPT }])));
      assert.equal(res.status, 401);
      assert.deepEqual(anthropic.errorDetails(res.status, res.text), { message: 'invalid x-api-key', type: 'authentication_error', param: null, code: null });
    }
    mock.fault = 'error-before-first-byte';
    try {
      const res = await send(anthropic.chatRequest(target(), chat([{ role: 'user', content: PROMPT }], { stream: true })));
      assert.equal(res.status, 500);
      assert.equal(anthropic.errorDetails(res.status, res.text).message, 'Internal server error');
    } finally { mock.fault = 'none'; }
    assert.equal(anthropic.errorDetails(502, '<html>bad gateway</html>').message, '<html>bad gateway</html>');
  });

  it('has no embeddings API, and rejects a body that is not a Message', () => {
    assert.equal(anthropic.embeddingsRequest, undefined);
    assert.throws(() => anthropic.chatResponse({ type: 'error' }), (err: unknown) => err instanceof GatewayError && err.code === 'upstream_error');
  });
});

const FIXTURES = new URL('../../test/fixtures/anthropic/', import.meta.url);
const fixture = (name: string) => JSON.parse(readFileSync(new URL(`${name}.json`, FIXTURES), 'utf8'));

describe('anthropic wire transcripts, each played by the mock and read through the adapter', () => {
  const user: ChatMessage[] = [{ role: 'user', content: 'hi' }];
  for (const name of readdirSync(FIXTURES).filter((f) => f.endsWith('.json')).map((f) => f.slice(0, -5)).sort()) {
    const f = fixture(name);
    it(`${name}: ${f.description}`, async () => {
      mock.replay = f.response;
      try {
        if (f.expect.completion) {
          const got = anthropic.chatResponse(JSON.parse((await send(anthropic.chatRequest(target(), chat(user)))).text));
          // `created` is the gateway's clock, not the transcript's.
          assert.deepEqual({ ...got, created: undefined }, { ...f.expect.completion, created: undefined });
        } else if (f.expect.events) {
          const { events } = await stream(anthropic.chatRequest(target(), chat(user, { stream: true })));
          assert.deepEqual(JSON.parse(JSON.stringify(events)), f.expect.events);
        } else {
          const res = await send(anthropic.chatRequest(target(), chat(user)));
          assert.equal(res.status, f.response.status);
          assert.deepEqual(anthropic.errorDetails(res.status, res.text), f.expect.error);
          const sorted = (h: Array<[string, string]>) => [...h].sort(([a], [b]) => a.localeCompare(b));
          assert.deepEqual(sorted(passHeaders(headOf(f.response.headers), Date.parse(f.expect.now))), sorted(f.expect.headers));
        }
      } finally {
        mock.replay = undefined;
      }
    });
  }
});

it('rate-limit headers: combined token limits where the account reports them, input tokens where it does not', () => {
  const now = Date.parse('2030-01-01T00:00:00Z');
  const combined = headOf({
    'anthropic-ratelimit-tokens-limit': '80000', 'anthropic-ratelimit-tokens-remaining': '79000', 'anthropic-ratelimit-tokens-reset': '2030-01-01T00:00:00.250Z',
    'anthropic-ratelimit-input-tokens-limit': '40000', 'anthropic-ratelimit-input-tokens-remaining': '1',
    'anthropic-ratelimit-requests-reset': '2030-01-01T00:01:05Z',
  });
  assert.deepEqual(passHeaders(combined, now), [
    ['x-ratelimit-reset-requests', '1m5s'],
    ['x-ratelimit-limit-tokens', '80000'], ['x-ratelimit-remaining-tokens', '79000'], ['x-ratelimit-reset-tokens', '250ms'],
  ]);
  const inputOnly = headOf({ 'anthropic-ratelimit-input-tokens-limit': '40000', 'anthropic-ratelimit-input-tokens-reset': 'not a time' });
  assert.deepEqual(passHeaders(inputOnly, now), [['x-ratelimit-limit-tokens', '40000']]);
  assert.deepEqual(passHeaders(headOf({ 'content-type': 'application/json' }), now), []);
});

it('a stop reason named as an object\'s prototype member reads as a normal stop, as any unknown one', () => {
  for (const reason of ['constructor', '__proto__', 'toString', 'pause_turn_v2']) assert.equal(finishReason(reason), 'stop', reason);
  assert.equal(finishReason('max_tokens'), 'length');
});
