// The Gemini adapter against a mock Gemini API over real HTTP: chat, streams
// (CRLF-framed SSE, as Gemini sends them), errors and embeddings.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ChatMessage, ChatRequest, EmbeddingsRequest, UpstreamRequest, UpstreamTarget } from '../src/domain.js';
import { GatewayError } from '../src/errors.js';
import { gemini } from '../src/providers/gemini/index.js';
import { midStreamText } from '../src/providers/gemini/stream.js';
import { expectOneVectorPerInput } from '../src/providers/embeddings-encoding.js';
import { GEMINI_MOCK_DIMENSIONS, GEMINI_MOCK_KEY, mockVector, startGeminiMock, type GeminiMockUpstream } from './mocks/gemini-mock.js';
import { chatFor, deltaText as text, send, streamThrough } from './helpers/upstream-call.js';

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

describe('gemini adapter: chat', () => {
  it('translates a chat request and its JSON answer', async () => {
    const up = gemini.chatRequest(flash(), chat([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hello' },
      { role: 'assistant', content: 'hi' },
      { role: 'user', content: PROMPT },
    ], { temperature: 1.5, top_p: 0.8, max_tokens: 100, stop: ['END'], seed: 7, user: 'dropped' }));
    const res = await send(up);
    assert.equal(res.status, 200);
    const result = gemini.chatResponse(JSON.parse(res.text));
    assert.equal(result.content, PROMPT);
    assert.equal(result.finish_reason, 'stop');
    assert.deepEqual(result.usage, { prompt_tokens: 13, completion_tokens: 9, total_tokens: 22 });

    const sent = mock.requests.at(-1)!;
    assert.equal(sent.url, '/v1beta/models/gemini-2.5-flash:generateContent');
    assert.deepEqual(sent.body.systemInstruction, { parts: [{ text: 'Be brief.' }] });
    assert.deepEqual(sent.body.contents.map((c: any) => c.role), ['user', 'model', 'user']);
    assert.deepEqual(sent.body.generationConfig, { temperature: 1.5, topP: 0.8, maxOutputTokens: 100, stopSequences: ['END'], seed: 7 });
    assert.equal(sent.body.user, undefined);
  });

  it('merges consecutive turns and maps MAX_TOKENS to length', async () => {
    const up = gemini.chatRequest(flash(), chat([
      { role: 'user', content: 'first' },
      { role: 'user', content: [{ type: 'text', text: 'one two three' }] },
    ], { max_tokens: 2 }));
    const result = gemini.chatResponse(JSON.parse((await send(up)).text));
    assert.equal(result.finish_reason, 'length');
    assert.deepEqual(mock.requests.at(-1)!.body.contents, [{ role: 'user', parts: [{ text: 'first' }, { text: 'one two three' }] }]);
  });

  it('maps finish reasons and blocked prompts', () => {
    const answer = (finishReason: string) => gemini.chatResponse({ candidates: [{ content: { parts: [{ text: 'x' }] }, finishReason }] }).finish_reason;
    assert.equal(answer('SAFETY'), 'content_filter');
    assert.equal(answer('RECITATION'), 'content_filter');
    assert.equal(answer('OTHER'), 'stop');
    const blocked = gemini.chatResponse({ promptFeedback: { blockReason: 'SAFETY' }, usageMetadata: { promptTokenCount: 4, totalTokenCount: 4 } });
    assert.deepEqual(blocked, { content: '', finish_reason: 'content_filter', usage: { prompt_tokens: 4, completion_tokens: 0, total_tokens: 4 } });
    assert.throws(() => gemini.chatResponse({}), (err: unknown) => err instanceof GatewayError && err.code === 'upstream_error');
  });

  it('translates a stream chunk by chunk, with usage before done', async () => {
    const up = gemini.chatRequest(flash(), chat([{ role: 'user', content: PROMPT }], { stream: true }));
    assert.equal(up.url.path, '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    const { events, cut } = await stream(up);
    assert.equal(cut, undefined);
    assert.deepEqual(events[0], { type: 'delta', role: 'assistant', content: 'the ' });
    assert.equal(events.filter((e) => e.type === 'delta' && e.role).length, 1);
    assert.equal(text(events), PROMPT);
    assert.deepEqual(events.slice(-3), [
      { type: 'delta', finish_reason: 'stop' },
      { type: 'usage', usage: { prompt_tokens: 9, completion_tokens: 9, total_tokens: 18 } },
      { type: 'done' },
    ]);
  });

  it('streams escaped text, quotes and non-ASCII intact', async () => {
    const tricky = 'say "hi" \\ back\tslash: {"text": "x"}, é 😀 finishReason" end';
    const { events } = await stream(gemini.chatRequest(flash(), chat([{ role: 'user', content: tricky }], { stream: true })));
    assert.equal(text(events), tricky);
    assert.deepEqual(events.at(-1), { type: 'done' });
  });

  it('turns a mid-stream error chunk into an error StreamEvent', async () => {
    mock.fault = 'error-event-mid-stream';
    try {
      const { events } = await stream(gemini.chatRequest(flash(), chat([{ role: 'user', content: PROMPT }], { stream: true })));
      assert.deepEqual(events.at(-1), { type: 'error', message: 'The model is overloaded. Please try again later.' });
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

  it('extracts Gemini error messages: bad credential and upstream failure', async () => {
    for (const key of ['wrong-key', null]) {
      const res = await send(gemini.chatRequest(flash(key), chat([{ role: 'user', content: PROMPT }])));
      assert.equal(res.status, 401);
      assert.equal(gemini.errorMessage(res.status, res.text), 'API key not valid. Please pass a valid API key.');
    }
    mock.fault = 'error-before-first-byte';
    try {
      const res = await send(gemini.chatRequest(flash(), chat([{ role: 'user', content: PROMPT }], { stream: true })));
      assert.equal(res.status, 500);
      assert.equal(gemini.errorMessage(res.status, res.text), 'An internal error has occurred.');
    } finally { mock.fault = 'none'; }
    assert.equal(gemini.errorMessage(400, '[{"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT"}}]'), 'bad');
  });

  it('refuses what it cannot translate and asks for JSON when told to', () => {
    const refused = (req: ChatRequest, param: string) => assert.throws(() => gemini.chatRequest(flash(), req),
      (err: unknown) => err instanceof GatewayError && err.code === 'invalid_request' && err.param === param);
    const user: ChatMessage = { role: 'user', content: 'hi' };
    refused(chat([user], { raw: { tools: [{ type: 'function', function: { name: 'f' } }] } }), 'tools');
    refused(chat([user], { raw: { n: 3 } }), 'n');
    refused(chat([user], { raw: { response_format: { type: 'json_schema', json_schema: {} } } }), 'response_format');
    refused(chat([{ role: 'user', content: [{ type: 'input_audio', input_audio: {} }] }]), 'messages');
    refused(chat([{ role: 'system', content: 'alone' }]), 'messages');
    const json = gemini.chatRequest(flash(), chat([user], { raw: { response_format: { type: 'json_object' } } }));
    assert.equal(JSON.parse(json.body).generationConfig.responseMimeType, 'application/json');
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
      assert.equal(gemini.errorMessage(res.status, res.text), 'An internal error has occurred.');
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
    const spaced = '{"candidates": [{"content": {"parts": [{"text": "Okay"}],"role": "model"}}],"usageMetadata": {"promptTokenCount": 5}}';
    assert.equal(midStreamText(spaced), 'Okay');
    assert.equal(midStreamText(chunk([{ text: 'a "quoted" \\ line\n' }])), 'a "quoted" \\ line\n');
    assert.equal(midStreamText(chunk([{ text: 'a' }, { text: 'b' }])), undefined);
    assert.equal(midStreamText(chunk([{ text: 'hmm', thought: true }])), undefined);
    assert.equal(midStreamText(chunk([{ text: 'end' }], { finishReason: 'STOP' })), undefined);
    assert.equal(midStreamText('{"error": {"code": 503, "message": "\\"text\\": no", "status": "UNAVAILABLE"}}'), undefined);
  });

  it('joins several parts and leaves thought summaries out', () => {
    const t = gemini.streamTranslator();
    assert.deepEqual(t.event(undefined, chunk([{ text: 'plan', thought: true }, { text: 'a' }, { text: 'b' }])), [{ type: 'delta', role: 'assistant', content: 'ab' }]);
    assert.deepEqual(t.event(undefined, chunk([{ text: 'c' }])), [{ type: 'delta', content: 'c' }]);
  });

  it('closes with the latest usage even when the last chunk carries none', () => {
    const t = gemini.streamTranslator();
    t.event(undefined, chunk([{ text: 'a' }]));
    const last = JSON.stringify({ candidates: [{ content: { parts: [{ text: '' }], role: 'model' }, finishReason: 'MAX_TOKENS' }] });
    assert.deepEqual(t.event(undefined, last), [
      { type: 'delta', finish_reason: 'length' },
      { type: 'usage', usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } },
      { type: 'done' },
    ]);
  });

  it('ends a blocked prompt as content_filter, and reports malformed chunks', () => {
    const blocked = gemini.streamTranslator().event(undefined, JSON.stringify({ promptFeedback: { blockReason: 'SAFETY' }, usageMetadata: usage }));
    assert.deepEqual(blocked.map((e) => e.type), ['delta', 'delta', 'usage', 'done']);
    assert.deepEqual(blocked[1], { type: 'delta', finish_reason: 'content_filter' });
    assert.equal(gemini.streamTranslator().event(undefined, '{"candidates": [')[0]!.type, 'error');
  });
});
