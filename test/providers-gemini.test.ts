// The Gemini adapter against a mock Gemini API over real HTTP: chat, streams
// (CRLF-framed SSE, as Gemini sends them), errors and embeddings; and every
// wire transcript of test/fixtures/gemini played back through the adapter.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import type { EmbeddingsRequest, StreamEvent, UpstreamRequest, UpstreamTarget } from '../src/domain.js';
import { GatewayError } from '../src/errors.js';
import { gemini } from '../src/providers/gemini/index.js';
import { midStreamText } from '../src/providers/gemini/stream.js';
import { finishReason } from '../src/providers/gemini/candidates.js';

import { expectOneVectorPerInput } from '../src/providers/embeddings-encoding.js';
import { GEMINI_MOCK_DIMENSIONS, GEMINI_MOCK_KEY, mockVector, startGeminiMock, type GeminiMockUpstream } from './mocks/gemini-mock.js';
import { chatFor, deltaText as text, send, streamThrough } from './helpers/upstream-call.js';
import { headOf } from './helpers/answer-head.js';
import type { Transcript } from './mocks/mock-server.js';

const PROMPT = 'the quick brown fox jumps over the lazy dog';

let mock: GeminiMockUpstream;
before(async () => { mock = await startGeminiMock(); });
after(() => mock.close());

/** `null` sends no credential at all. */
const target = (model: string, apiKey: string | null = GEMINI_MOCK_KEY): UpstreamTarget =>
  ({ provider: 'gemini', kind: 'gemini', baseUrl: `${mock.url}/v1beta`, model, apiKey: apiKey ?? undefined });
const flash = (apiKey?: string | null) => target('gemini-2.5-flash', apiKey);

const chat = chatFor('gemini-flash');

const embed = (input: string[], fields: Partial<EmbeddingsRequest> = {}): EmbeddingsRequest =>
  ({ model: 'gemini-embedding-001', input, single: false, encoding_format: 'float', ...fields });

const stream = (up: UpstreamRequest) => streamThrough(gemini, up);

describe('gemini adapter: chat over the mock', () => {
  it('translates a chat request and its JSON answer', async () => {
    const up = gemini.chatRequest(flash(), chat([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hello' },
      { role: 'assistant', content: 'hi' },
      { role: 'user', content: PROMPT },
    ], { temperature: 1.5, top_p: 0.8, max_tokens: 100, stop: ['END'], seed: 7, presence_penalty: 0.5, frequency_penalty: -0.5, user: 'dropped' }));
    const res = await send(up);
    assert.equal(res.status, 200);
    const result = gemini.chatResponse(JSON.parse(res.text));
    assert.equal(result.object, 'chat.completion');
    assert.equal(typeof result.created, 'number');
    assert.deepEqual(result.choices, [{ index: 0, message: { role: 'assistant', content: PROMPT }, finish_reason: 'stop' }]);
    assert.deepEqual(result.usage, { prompt_tokens: 13, completion_tokens: 9, total_tokens: 22, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } });

    const sent = mock.requests.at(-1)!;
    assert.equal(sent.url, '/v1beta/models/gemini-2.5-flash:generateContent');
    assert.deepEqual(sent.body.systemInstruction, { parts: [{ text: 'Be brief.' }] });
    assert.deepEqual(sent.body.contents.map((c: any) => c.role), ['user', 'model', 'user']);
    assert.deepEqual(sent.body.generationConfig, { temperature: 1.5, topP: 0.8, maxOutputTokens: 100, stopSequences: ['END'], seed: 7, presencePenalty: 0.5, frequencyPenalty: -0.5 });
    assert.equal(sent.body.user, undefined);
  });

  it('merges consecutive turns and maps MAX_TOKENS to length', async () => {
    const up = gemini.chatRequest(flash(), chat([
      { role: 'user', content: 'first' },
      { role: 'user', content: [{ type: 'text', text: 'one two three' }] },
    ], { max_tokens: 2 }));
    const result = gemini.chatResponse(JSON.parse((await send(up)).text));
    assert.equal(result.choices[0]!.finish_reason, 'length');
    assert.deepEqual(mock.requests.at(-1)!.body.contents, [{ role: 'user', parts: [{ text: 'first' }, { text: 'one two three' }] }]);
  });

  it('translates a stream chunk by chunk, with usage before done', async () => {
    const up = gemini.chatRequest(flash(), chat([{ role: 'user', content: PROMPT }], { stream: true }));
    assert.equal(up.url.path, '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    const { events, cut } = await stream(up);
    assert.equal(cut, undefined);
    assert.deepEqual(events[0], { type: 'chunk', chunk: { choices: [{ index: 0, delta: { role: 'assistant', content: 'the ' }, finish_reason: null }] } });
    assert.equal(events.filter((e) => e.type === 'chunk' && e.chunk.choices[0]?.delta.role).length, 1);
    assert.equal(text(events), PROMPT);
    assert.deepEqual(events.slice(-3), [
      { type: 'chunk', chunk: { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] } },
      { type: 'chunk', chunk: { choices: [], usage: { prompt_tokens: 9, completion_tokens: 9, total_tokens: 18, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } } } },
      { type: 'done' },
    ]);
  });

  it('streams escaped text, quotes and non-ASCII intact', async () => {
    const tricky = 'say "hi" \\ back\tslash: {"text": "x"}, é 😀 finishReason" "content" "index": 1 end';
    const { events } = await stream(gemini.chatRequest(flash(), chat([{ role: 'user', content: tricky }], { stream: true })));
    assert.equal(text(events), tricky);
    assert.deepEqual(events.at(-1), { type: 'done' });
  });

  it('turns a mid-stream error chunk into an error StreamEvent', async () => {
    mock.fault = 'error-event-mid-stream';
    try {
      const { events } = await stream(gemini.chatRequest(flash(), chat([{ role: 'user', content: PROMPT }], { stream: true })));
      assert.deepEqual(events.at(-1), {
        type: 'error', message: 'The model is overloaded. Please try again later.',
        upstream: { status: 503, details: { message: 'The model is overloaded. Please try again later.', param: null, code: 'UNAVAILABLE', type: 'server_error' } },
      });
      assert.equal(text(events), 'the quick ');
    } finally { mock.fault = 'none'; }
  });

  it('never reports done for a stream that was cut', async () => {
    mock.fault = 'drop-mid-stream';
    try {
      const { events, cut } = await stream(gemini.chatRequest(flash(), chat([{ role: 'user', content: PROMPT }], { stream: true })));
      assert.ok(cut);
      assert.ok(!events.some((e) => e.type === 'done'));
    } finally { mock.fault = 'none'; }
  });

  it('reads Gemini error bodies: bad credential and upstream failure', async () => {
    for (const key of ['wrong-key', null]) {
      const res = await send(gemini.chatRequest(flash(key), chat([{ role: 'user', content: PROMPT }])));
      assert.equal(res.status, 401);
      assert.deepEqual(gemini.errorDetails(res.status, res.text),
        { message: 'API key not valid. Please pass a valid API key.', type: 'authentication_error', param: null, code: 'UNAUTHENTICATED' });
    }
    mock.fault = 'error-before-first-byte';
    try {
      const res = await send(gemini.chatRequest(flash(), chat([{ role: 'user', content: PROMPT }], { stream: true })));
      assert.equal(res.status, 500);
      assert.deepEqual(gemini.errorDetails(res.status, res.text), { message: 'An internal error has occurred.', type: 'server_error', param: null, code: 'INTERNAL' });
    } finally { mock.fault = 'none'; }
    assert.deepEqual(gemini.errorDetails(400, '[{"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT"}}]'),
      { message: 'bad', type: 'invalid_request_error', param: null, code: 'INVALID_ARGUMENT' });
    assert.deepEqual(gemini.errorDetails(502, '<html>bad gateway</html>'), { message: '<html>bad gateway</html>' });
    assert.equal(gemini.credentialRejected!(400, '{"error":{"details":[{"reason":"API_KEY_INVALID"}]}}'), true);
    assert.equal(gemini.credentialRejected!(400, '{"error":{"message":"bad"}}'), false);
  });

  it('mock tool mode: a call of the allowed function, then text for its result, over JSON and SSE', async () => {
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { location: { type: 'string' } } } } },
      { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string' } } } } }];
    const first = gemini.chatResponse(JSON.parse((await send(gemini.chatRequest(flash(), chat([{ role: 'user', content: 'weather?' }], { raw: { tools } })))).text));
    const call = first.choices[0]!.message.tool_calls![0]!;
    assert.deepEqual(call.function, { name: 'get_weather', arguments: '{"location":"Paris"}' });
    assert.equal(first.choices[0]!.finish_reason, 'tool_calls');

    mock.toolArguments = { zone: 'UTC' };
    try {
      const named = await stream(gemini.chatRequest(flash(), chat([{ role: 'user', content: 'time?' }], { stream: true, raw: { tools, tool_choice: { type: 'function', function: { name: 'get_time' } } } })));
      const delta = named.events[0]!.type === 'chunk' ? named.events[0]!.chunk.choices[0]!.delta : undefined;
      assert.deepEqual(delta?.tool_calls?.[0]?.function, { name: 'get_time', arguments: '{"zone":"UTC"}' });
      assert.deepEqual(mock.requests.at(-1)!.body.toolConfig, { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_time'] } });
    } finally { mock.toolArguments = undefined; }

    const none = gemini.chatResponse(JSON.parse((await send(gemini.chatRequest(flash(), chat([{ role: 'user', content: 'just talk' }], { raw: { tools, tool_choice: 'none' } })))).text));
    assert.equal(none.choices[0]!.message.content, 'just talk');

    const second = gemini.chatResponse(JSON.parse((await send(gemini.chatRequest(flash(), chat([
      { role: 'user', content: 'weather?' },
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: call.id, content: '{"temp":21}' },
    ], { raw: { tools } })))).text));
    assert.equal(second.choices[0]!.message.content, 'Tool said: {"temp":21}');
    assert.equal(second.choices[0]!.finish_reason, 'stop');
  });

  it('mock answers candidateCount candidates, JSON and SSE', async () => {
    const json = gemini.chatResponse(JSON.parse((await send(gemini.chatRequest(flash(), chat([{ role: 'user', content: 'a b c' }], { n: 3 })))).text));
    assert.deepEqual(json.choices.map((c) => [c.index, c.message.content]), [[0, 'a b c'], [1, 'a b c'], [2, 'a b c']]);
    assert.equal(mock.requests.at(-1)!.body.generationConfig.candidateCount, 3);
    const { events } = await stream(gemini.chatRequest(flash(), chat([{ role: 'user', content: 'a b c' }], { n: 2, stream: true })));
    const byIndex = ['', ''];
    for (const e of events) if (e.type === 'chunk') for (const c of e.chunk.choices) byIndex[c.index] += c.delta.content ?? '';
    assert.deepEqual(byIndex, ['a b c', 'a b c']);
    assert.equal(events.filter((e) => e.type === 'chunk' && e.chunk.choices[0]?.finish_reason === 'stop').length, 2);
    assert.deepEqual(events.at(-1), { type: 'done' });
  });
});

interface Fixture {
  description: string;
  response: Transcript;
  expect: { choices?: unknown[]; usage?: unknown; events?: StreamEvent[]; error?: string; details?: unknown; headers?: unknown };
}

const FIXTURES = new URL('../../test/fixtures/gemini/', import.meta.url);
const fixtures = readdirSync(FIXTURES).filter((f) => f.endsWith('.json')).sort()
  .map((f) => [f, JSON.parse(readFileSync(new URL(f, FIXTURES), 'utf8')) as Fixture] as const);

const SYNTHESISED = /^call_[A-Za-z0-9_-]{22}$/;

/** Synthesised tool-call ids are hashes: checked for their form, then compared as `call_<hash>`; the raw ids are collected. */
function normaliseIds(value: unknown, ids: string[]): unknown {
  if (Array.isArray(value)) return value.map((v) => normaliseIds(v, ids));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === 'id' && typeof v === 'string' && SYNTHESISED.test(v)) { ids.push(v); out[k] = 'call_<hash>'; } else out[k] = normaliseIds(v, ids);
  }
  return out;
}

describe('gemini wire transcripts', () => {
  const idsOf = new Map<string, string[]>();
  const replay = async (f: Fixture, streamed: boolean) => {
    mock.replay = f.response;
    try {
      const up = gemini.chatRequest(flash(), chat([{ role: 'user', content: 'x' }], { stream: streamed }));
      return streamed ? (await stream(up)).events : await send(up);
    } finally { mock.replay = undefined; }
  };

  assert.ok(fixtures.length >= 12, 'the fixtures folder is read');
  for (const [file, f] of fixtures) {
    it(`${file}: ${f.description}`, async () => {
      const ids: string[] = [];
      if (f.expect.events) {
        const events = await replay(f, true) as StreamEvent[];
        assert.deepEqual(normaliseIds(events, ids), f.expect.events);
      } else if (f.expect.choices) {
        const res = await replay(f, false) as { status: number; text: string };
        const completion = gemini.chatResponse(JSON.parse(res.text));
        assert.equal(completion.object, 'chat.completion');
        assert.deepEqual(normaliseIds(completion.choices, ids), f.expect.choices);
        assert.deepEqual(completion.usage, f.expect.usage);
        // Translating the same answer again gives the same ids.
        const again: string[] = [];
        normaliseIds(gemini.chatResponse(JSON.parse(res.text)).choices, again);
        assert.deepEqual(again, ids);
      } else if (f.expect.error) {
        const res = await replay(f, false) as { status: number; text: string };
        assert.throws(() => gemini.chatResponse(JSON.parse(res.text)), (err: unknown) => err instanceof GatewayError && err.code === f.expect.error);
      } else {
        const res = await replay(f, false) as { status: number; text: string };
        assert.equal(res.status, f.response.status);
        assert.deepEqual(gemini.errorDetails(res.status, res.text), f.expect.details);
        assert.deepEqual(gemini.errorHeaders(res.status, res.text), f.expect.headers);
      }
      assert.equal(new Set(ids).size, ids.length, 'tool-call ids are unique within an answer');
      idsOf.set(file, ids);
    });
  }

  it('gives a call the same id whether the answer came as JSON or as a stream', () => {
    const json = idsOf.get('function-call.json');
    assert.ok(json && json.length === 1);
    assert.deepEqual(idsOf.get('function-call-stream.json'), json);
    assert.deepEqual(idsOf.get('parallel-function-calls-stream.json'), idsOf.get('parallel-function-calls.json'));
  });

  it('keeps the id Gemini gave a call', () => {
    const c = gemini.chatResponse({ candidates: [{ content: { parts: [{ functionCall: { id: 'fc-7', name: 'f', args: {} } }] }, finishReason: 'STOP' }] });
    assert.equal(c.choices[0]!.message.tool_calls![0]!.id, 'fc-7');
  });

  it('passes retry-after from headers and nothing else', () => {
    assert.deepEqual(gemini.passHeaders(headOf({ 'retry-after': '7', 'content-type': 'application/json', 'x-goog-foo': 'bar' })), [['retry-after', '7']]);
    assert.deepEqual(gemini.passHeaders(headOf({})), []);
    assert.deepEqual(gemini.errorHeaders(429, '{"error":{"code":429,"message":"slow down","status":"RESOURCE_EXHAUSTED"}}'), []);
  });
});

describe('gemini adapter: embeddings', () => {
  const model = () => target('gemini-embedding-001');

  it('embeds one input with embedContent', async () => {
    const up = gemini.embeddingsRequest!(model(), embed(['hello world'], { single: true }));
    const res = await send(up);
    assert.equal(res.status, 200);
    assert.equal(mock.requests.at(-1)!.url, '/v1beta/models/gemini-embedding-001:embedContent');
    const { vectors } = gemini.embeddingsResponse!(JSON.parse(res.text));
    assert.deepEqual(vectors, [mockVector('hello world', GEMINI_MOCK_DIMENSIONS)]);
  });

  it('embeds a batch with one batchEmbedContents call, in input order, with dimensions', async () => {
    const input = ['alpha', 'beta', 'gamma', 'delta'];
    const before = mock.requests.length;
    const res = await send(gemini.embeddingsRequest!(model(), embed(input, { dimensions: 3, user: 'dropped' })));
    assert.equal(mock.requests.length, before + 1);
    const sent = mock.requests.at(-1)!;
    assert.equal(sent.url, '/v1beta/models/gemini-embedding-001:batchEmbedContents');
    assert.deepEqual(sent.body.requests[1], { model: 'models/gemini-embedding-001', content: { parts: [{ text: 'beta' }] }, outputDimensionality: 3 });
    const { vectors } = gemini.embeddingsResponse!(JSON.parse(res.text));
    assert.deepEqual(vectors, input.map((t) => mockVector(t, 3)));
    expectOneVectorPerInput(vectors, input.length);
  });

  it('lets a short batch fail the call as embeddings_incomplete', async () => {
    mock.missingEmbeddings = 1;
    try {
      for (const input of [['a', 'b', 'c'], ['only']]) {
        const { vectors } = gemini.embeddingsResponse!(JSON.parse((await send(gemini.embeddingsRequest!(model(), embed(input)))).text));
        assert.throws(() => expectOneVectorPerInput(vectors, input.length),
          (err: unknown) => err instanceof GatewayError && err.code === 'embeddings_incomplete');
      }
    } finally { mock.missingEmbeddings = 0; }
  });

  it('honours faults on embeddings calls', async () => {
    const up = () => gemini.embeddingsRequest!(model(), embed(['a', 'b']));
    try {
      mock.fault = 'error-before-first-byte';
      const res = await send(up());
      assert.equal(res.status, 500);
      assert.equal(gemini.errorDetails(res.status, res.text).message, 'An internal error has occurred.');
      mock.fault = 'drop-mid-stream';
      await assert.rejects(send(up()));
    } finally { mock.fault = 'none'; }
  });

  it('refuses more inputs than one batch call takes', () => {
    assert.throws(() => gemini.embeddingsRequest!(model(), embed(Array.from({ length: 101 }, (_, i) => `t${i}`))),
      (err: unknown) => err instanceof GatewayError && err.code === 'invalid_request' && err.param === 'input');
  });
});

describe('gemini stream translator', () => {
  const usage = { promptTokenCount: 5, candidatesTokenCount: 2, totalTokenCount: 7 };
  const chunk = (parts: object[], extra: object = {}) => JSON.stringify({ candidates: [{ content: { parts, role: 'model' }, index: 0, ...extra }], usageMetadata: usage });

  it('reads the text of plain chunks without a full parse, as Gemini spaces them', () => {
    const spaced = '{"candidates": [{"content": {"parts": [{"text": "Okay"}],"role": "model"}, "index": 0}],"usageMetadata": {"promptTokenCount": 5}}';
    assert.equal(midStreamText(spaced), 'Okay');
    assert.equal(midStreamText(chunk([{ text: 'a "quoted" \\ line\n' }])), 'a "quoted" \\ line\n');
    assert.equal(midStreamText(chunk([{ text: 'a' }, { text: 'b' }])), undefined);
    // A part before the text, which the full parse refuses, is never skipped.
    assert.equal(midStreamText(chunk([{ inlineData: { mimeType: 'image/png', data: 'AA==' } }, { text: 'b' }])), undefined);
    assert.equal(midStreamText(chunk([{ executableCode: { language: 'PYTHON', code: 'x' } }, { text: 'b' }])), undefined);
    assert.equal(midStreamText(chunk([{ text: 'hmm', thought: true }])), undefined);
    assert.equal(midStreamText(chunk([{ text: 'end' }], { finishReason: 'STOP' })), undefined);
    assert.equal(midStreamText('{"error": {"code": 503, "message": "\\"text\\": no", "status": "UNAVAILABLE"}}'), undefined);
    // Another candidate, a candidate other than 0, or a call whose arguments hold a text-like object: full parse.
    const two = JSON.stringify({ candidates: [{ content: { parts: [{ text: 'a' }] }, index: 0 }, { content: { parts: [{ text: 'b' }] }, index: 1 }] });
    assert.equal(midStreamText(two), undefined);
    assert.equal(midStreamText(JSON.stringify({ candidates: [{ content: { parts: [{ text: 'b' }] }, index: 1 }] })), undefined);
    assert.equal(midStreamText(chunk([{ functionCall: { name: 'f', args: { list: [{ text: 'x' }] } } }])), undefined);
  });

  it('joins several parts and gives thoughts as reasoning_content', () => {
    const t = gemini.streamTranslator();
    assert.deepEqual(t.event(undefined, chunk([{ text: 'plan', thought: true }, { text: 'a' }, { text: 'b' }])),
      [{ type: 'chunk', chunk: { choices: [{ index: 0, delta: { role: 'assistant', reasoning_content: 'plan', content: 'ab' }, finish_reason: null }] } }]);
    assert.deepEqual(t.event(undefined, chunk([{ text: 'c' }])), [{ type: 'chunk', chunk: { choices: [{ index: 0, delta: { content: 'c' }, finish_reason: null }] } }]);
  });

  it('sends a finish as it comes, and the latest usage and done only when the body ends', () => {
    const t = gemini.streamTranslator();
    t.event(undefined, chunk([{ text: 'a' }]));
    const last = JSON.stringify({ candidates: [{ content: { parts: [{ text: '' }], role: 'model' }, finishReason: 'MAX_TOKENS' }] });
    assert.deepEqual(t.event(undefined, last), [{ type: 'chunk', chunk: { choices: [{ index: 0, delta: {}, finish_reason: 'length' }] } }]);
    // The finish repeated on a later chunk is not said again; that chunk's usage is the latest.
    const later = JSON.stringify({ candidates: [{ content: { parts: [{ text: '' }], role: 'model' }, finishReason: 'MAX_TOKENS' }], usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 3, totalTokenCount: 8 } });
    assert.deepEqual(t.event(undefined, later), []);
    assert.deepEqual(t.end!(), [
      { type: 'chunk', chunk: { choices: [], usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } } } },
      { type: 'done' },
    ]);
    // A candidate seen and not finished when the body ends: no done, so the stream was cut short.
    const cut = gemini.streamTranslator();
    cut.event(undefined, JSON.stringify({ candidates: [{ content: { parts: [{ text: 'a' }] }, finishReason: 'STOP', index: 0 }, { content: { parts: [{ text: 'b' }] }, index: 1 }] }));
    assert.deepEqual(cut.end!(), []);
  });

  it('reports malformed chunks, malformed calls and parts the chat shape cannot carry as errors', () => {
    assert.equal(gemini.streamTranslator().event(undefined, '{"candidates": [')[0]!.type, 'error');
    assert.equal(gemini.streamTranslator().event(undefined, '42')[0]!.type, 'error');
    const malformed = gemini.streamTranslator().event(undefined, chunk([], { finishReason: 'MALFORMED_FUNCTION_CALL' }));
    assert.match((malformed.at(-1) as { message: string }).message, /MALFORMED_FUNCTION_CALL/);
    const image = gemini.streamTranslator().event(undefined, chunk([{ inlineData: { mimeType: 'image/png', data: 'AA==' } }]));
    assert.match((image.at(-1) as { message: string }).message, /inlineData/);
  });
});

it('a finish reason named as an object\'s prototype member reads as a normal stop, as any unknown one', () => {
  for (const reason of ['constructor', '__proto__', 'toString', 'LANGUAGE']) assert.equal(finishReason(reason, false), 'stop', reason);
  assert.equal(finishReason('MAX_TOKENS', false), 'length');
});
