// Optional chat fields sent as null, as the OpenAI types allow and clients send
// (`stop: null`, `temperature: null`): accepted, passed as sent to an
// OpenAI-compatible upstream, and read as absent by the translators. They were
// refused with 400 `stop: Invalid input` before any upstream was asked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { UpstreamTarget } from '../src/domain.js';
import { parseChatRequest } from '../src/pipeline/chat-request.js';
import { anthropic } from '../src/providers/anthropic/index.js';
import { gemini } from '../src/providers/gemini/index.js';
import { openaiCompatible } from '../src/providers/openai-compatible/index.js';

const NULLS = {
  stream: null, temperature: null, top_p: null, n: null, max_tokens: null, max_completion_tokens: null, stop: null,
  seed: null, presence_penalty: null, frequency_penalty: null, user: null, stream_options: null,
};
const body = () => ({ model: 'm', messages: [{ role: 'user', content: 'hi' }], ...NULLS });
const target = (kind: UpstreamTarget['kind'], baseUrl: string): UpstreamTarget => ({ provider: kind, kind, baseUrl, model: 'up', apiKey: 'k' });

test('every optional chat field may be null, and null reads as absent', () => {
  const req = parseChatRequest(body());
  assert.equal(req.stream, false);
  assert.equal(req.n, 1);
  for (const f of ['temperature', 'top_p', 'max_tokens', 'stop', 'seed', 'presence_penalty', 'frequency_penalty', 'user'] as const) {
    assert.equal(req[f], undefined, f);
  }
  // A null member's value is still checked where it is not null.
  assert.throws(() => parseChatRequest({ ...body(), stop: 5 }), /stop/);
});

test('an OpenAI-compatible upstream gets the nulls as sent; Anthropic and Gemini get no such field', () => {
  const oa = JSON.parse(openaiCompatible.chatRequest(target('openai', 'http://oa.invalid/v1'), parseChatRequest(body())).body);
  for (const [k, v] of Object.entries(NULLS)) if (k !== 'stream' && k !== 'stream_options') assert.equal(oa[k], v, k);
  const an = JSON.parse(anthropic.chatRequest(target('anthropic', 'http://an.invalid'), parseChatRequest(body())).body);
  for (const k of ['temperature', 'top_p', 'stop_sequences', 'metadata']) assert.equal(k in an, false, k);
  assert.equal(an.max_tokens, 4096);
  const ge = JSON.parse(gemini.chatRequest(target('gemini', 'http://ge.invalid/v1beta'), parseChatRequest(body())).body);
  for (const k of ['temperature', 'topP', 'stopSequences', 'seed', 'maxOutputTokens', 'candidateCount']) assert.equal(k in (ge.generationConfig ?? {}), false, k);
});
