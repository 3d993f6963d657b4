// The Anthropic adapter against a mock Messages API over real HTTP: the adapter's
// requests are sent with undici and its stream translator fed by an SSE parser.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ChatMessage, ChatRequest, UpstreamRequest, UpstreamTarget } from '../src/domain.js';
import { GatewayError } from '../src/errors.js';
import { anthropic } from '../src/providers/anthropic/index.js';
import { DEFAULT_MAX_TOKENS } from '../src/providers/anthropic/request.js';
import { ANTHROPIC_MOCK_KEY, startAnthropicMock } from './mocks/anthropic-mock.js';
import type { MockUpstream } from './mocks/mock-server.js';
import { chatFor, deltaText as text, send, streamThrough } from './helpers/upstream-call.js';

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
    assert.equal(result.content, PROMPT);
    assert.equal(result.finish_reason, 'stop');
    assert.deepEqual(result.usage, { prompt_tokens: 11, completion_tokens: 9, total_tokens: 20 });

    const sent = mock.requests.at(-1)!;
    assert.equal(sent.url, '/v1/messages');
    assert.equal(sent.headers['anthropic-version'], '2023-06-01');
    assert.equal(sent.body.system, 'Be brief.');
    assert.deepEqual(sent.body.messages, [{ role: 'user', content: PROMPT }]);
    assert.equal(sent.body.max_tokens, DEFAULT_MAX_TOKENS);
    assert.equal(sent.body.temperature, 0.5);
    assert.equal(sent.body.top_p, undefined);
    assert.deepEqual(sent.body.metadata, { user_id: 'u-1' });
  });

  it('maps max_tokens, stop and merges consecutive turns and text parts', async () => {
    const up = anthropic.chatRequest(target(), chat([
      { role: 'system', content: 'One.' },
      { role: 'developer', content: 'Two.' },
      { role: 'user', content: 'first' },
      { role: 'user', content: [{ type: 'text', text: 'one two three four' }] },
    ], { max_tokens: 2, stop: 'END', top_p: 0.9 }));
    const result = anthropic.chatResponse(JSON.parse((await send(up)).text));
    assert.equal(result.finish_reason, 'length');
    assert.equal(result.content, 'first\none ');
    const sent = mock.requests.at(-1)!.body;
    assert.equal(sent.system, 'One.\n\nTwo.');
    assert.deepEqual(sent.messages, [{ role: 'user', content: [{ type: 'text', text: 'first' }, { type: 'text', text: 'one two three four' }] }]);
    assert.deepEqual(sent.stop_sequences, ['END']);
    assert.equal(sent.top_p, 0.9);
  });

  it('translates a stream event by event, with usage before done', async () => {
    const { events, cut } = await stream(anthropic.chatRequest(target(), chat([{ role: 'user', content: PROMPT }], { stream: true })));
    assert.equal(cut, undefined);
    assert.deepEqual(events[0], { type: 'delta', role: 'assistant' });
    assert.equal(text(events), PROMPT);
    assert.deepEqual(events.slice(-3), [
      { type: 'delta', finish_reason: 'stop' },
      { type: 'usage', usage: { prompt_tokens: 9, completion_tokens: 9, total_tokens: 18 } },
      { type: 'done' },
    ]);
  });

  it('turns a mid-stream error event into an error StreamEvent', async () => {
    mock.fault = 'error-event-mid-stream';
    try {
      const { events } = await stream(anthropic.chatRequest(target(), chat([{ role: 'user', content: PROMPT }], { stream: true })));
      assert.deepEqual(events.at(-1), { type: 'error', message: 'Overloaded' });
      assert.equal(text(events), 'the quick ');
      assert.ok(!events.some((e) => e.type === 'done'));
    } finally { mock.fault = 'none'; }
  });

  it('never reports done for a stream that was cut', async () => {
    mock.fault = 'drop-mid-stream';
    try {
      const { events, cut } = await stream(anthropic.chatRequest(target(), chat([{ role: 'user', content: PROMPT }], { stream: true })));
      assert.ok(cut);
      assert.ok(!events.some((e) => e.type === 'done'));
    } finally { mock.fault = 'none'; }
  });

  it('delivers slow chunks intact', async () => {
    mock.fault = 'slow-chunks';
    mock.slowMs = 20;
    mock.chunks = 3;
    try {
      const t0 = Date.now();
      const { events } = await stream(anthropic.chatRequest(target(), chat([{ role: 'user', content: PROMPT }], { stream: true })));
      assert.equal(text(events), PROMPT);
      assert.ok(Date.now() - t0 >= 50);
    } finally { mock.fault = 'none'; mock.chunks = undefined; }
  });

  it('extracts Anthropic error messages: bad credential and upstream failure', async () => {
    for (const key of ['wrong-key', null]) {
      const res = await send(anthropic.chatRequest(target(key), chat([{ role: 'user', content: PROMPT }])));
      assert.equal(res.status, 401);
      assert.equal(anthropic.errorMessage(res.status, res.text), 'invalid x-api-key');
    }
    mock.fault = 'error-before-first-byte';
    try {
      const res = await send(anthropic.chatRequest(target(), chat([{ role: 'user', content: PROMPT }], { stream: true })));
      assert.equal(res.status, 500);
      assert.equal(anthropic.errorMessage(res.status, res.text), 'Internal server error');
    } finally { mock.fault = 'none'; }
    assert.equal(anthropic.errorMessage(502, '<html>bad gateway</html>'), '<html>bad gateway</html>');
  });

  it('refuses what it cannot translate, naming the field', () => {
    const refused = (req: ChatRequest, param: string) => assert.throws(() => anthropic.chatRequest(target(), req),
      (err: unknown) => err instanceof GatewayError && err.code === 'invalid_request' && err.param === param);
    const user: ChatMessage = { role: 'user', content: 'hi' };
    refused(chat([user], { temperature: 1.5 }), 'temperature');
    refused(chat([user], { raw: { tools: [{ type: 'function', function: { name: 'f' } }] } }), 'tools');
    refused(chat([user], { raw: { n: 2 } }), 'n');
    refused(chat([user], { raw: { response_format: { type: 'json_object' } } }), 'response_format');
    refused(chat([{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }]), 'messages');
    refused(chat([user, { role: 'tool', content: 'r', tool_call_id: 'c' }]), 'messages');
    refused(chat([{ role: 'system', content: 'only a system prompt' }]), 'messages');
  });

  it('has no embeddings API', () => {
    assert.equal(anthropic.embeddingsRequest, undefined);
    assert.equal(anthropic.embeddingsResponse, undefined);
  });

  it('rejects a body that is not a Message', () => {
    assert.throws(() => anthropic.chatResponse({ type: 'error' }), (err: unknown) => err instanceof GatewayError && err.code === 'upstream_error');
  });
});
