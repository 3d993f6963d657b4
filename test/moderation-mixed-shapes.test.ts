// Moderation over text members that stream in more than one shape (a list,
// then strings; a string, then a list part; an object, then a string): a term
// split inside a word across two pieces is blocked, buffered and chunked. A
// bare thinking block is read; Together's choice `seed` and OpenRouter's
// `native_finish_reason` are not text, and a null member beside the delta
// does not make chunked moderation send empty chunks.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import type { Transcript } from './mocks/mock-server.js';
import { startGateway, type TestGateway } from './helpers/gateway.js';
import { UPSTREAM_KEY_ENV } from './helpers/fixtures.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

const moderation = (mode: 'buffered' | 'chunked') => ({
  mode, rules: [{ name: 'weapons', category: 'violence', terms: ['make a bomb'] }, { name: 'cards', category: 'fraud', pattern: '\\d{16}', max_length: 16 }],
});
const base = { id: 'chatcmpl-up', object: 'chat.completion', created: 1_700_000_000, model: 'up-model' };
const usage = { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 };
const chunk = (choice: object) => ({ data: { ...base, object: 'chat.completion.chunk', choices: [{ index: 0, finish_reason: null, ...choice }] } });
const end = [chunk({ delta: {}, finish_reason: 'stop' }), { data: '[DONE]' }];

describe('moderation over text that streams in more than one shape', () => {
  let mock: OpenAIMock;
  let gw: TestGateway;
  const keys: Record<string, string> = {};
  before(async () => {
    mock = await startOpenAIMock();
    gw = await startGateway({
      http: 'node',
      env: { [UPSTREAM_KEY_ENV]: OPENAI_MOCK_KEY, SLUICE_PAYLOAD_SECRET: 'x'.repeat(40) },
      config: {
        providers: { up: { kind: 'openai', base_url: `${mock.url}/v1`, api_key_env: UPSTREAM_KEY_ENV } },
        models: [{ id: 'up-model', provider: 'up', context_window: 8_000, pricing: { prompt: 1, completion: 2 } }],
        organizations: [
          { id: 'buffered', models: ['up-model'], store_payloads: true, policy: { dlp: { detectors: [] }, shield: { builtin: false }, moderation: moderation('buffered') } },
          { id: 'chunked', models: ['up-model'], policy: { dlp: { detectors: [] }, shield: { builtin: false }, moderation: moderation('chunked') } },
        ],
      },
    });
    for (const org of ['buffered', 'chunked']) keys[org] = await gw.key(org);
  });
  after(async () => { await gw.close(); await mock.close(); });

  const chat = (org: string, body: object) => fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${keys[org]}` }, body: JSON.stringify({ model: 'up-model', messages: [{ role: 'user', content: 'go' }], ...body }),
  });
  const contentOf = (sse: string) => sse.split('\n\n').filter((e) => e.startsWith('data: {')).map((e) => JSON.parse(e.slice(6)))
    .map((c) => { const v = c.choices?.[0]?.delta?.content; return typeof v === 'string' ? v : Array.isArray(v) ? v.map((p: any) => p.text ?? '').join('') : ''; }).join('');

  // After a list, a string piece ends the text part before it: a term split inside a word is one text.
  const wipes: Array<[string, Transcript]> = [
    ['magistral-style: a list (thinking) first, then the answer streamed as strings', { sse: [
      chunk({ delta: { role: 'assistant', content: [{ type: 'thinking', thinking: [{ type: 'text', text: 'ok.' }] }] } }),
      chunk({ delta: { content: 'Here is how to make a b' } }), chunk({ delta: { content: 'omb' } }), chunk({ delta: { content: ' at home.' } }), ...end] }],
    ['an empty list first, then strings', { sse: [
      chunk({ delta: { role: 'assistant', content: [] } }),
      chunk({ delta: { content: 'how to make a b' } }), chunk({ delta: { content: 'omb' } }), ...end] }],
    ['a string, then a list part that ends the word', { sse: [
      chunk({ delta: { role: 'assistant', content: 'how to make a bo' } }),
      chunk({ delta: { content: [{ type: 'text', text: 'mb' }] } }), ...end] }],
    ['an object, then a string that ends the word', { sse: [
      chunk({ delta: { role: 'assistant', content: { type: 'text', text: 'how to make a bo' } } }),
      chunk({ delta: { content: 'mb' } }), ...end] }],
  ];
  for (const [what, sse] of wipes) {
    test(`buffered: ${what} is blocked`, async () => {
      mock.replay = sse;
      const res = await chat('buffered', { stream: true });
      const text = await res.text();
      assert.equal(res.status, 422, `${what}: shown to the caller as "${contentOf(text)}"`);
    });
  }

  for (const [what, sse] of wipes) {
    test(`chunked: ${what} never shows the term`, async () => {
      mock.replay = sse;
      const res = await chat('chunked', { stream: true });
      const text = await res.text();
      assert.ok(!contentOf(text).includes('bomb'), `${what}: shown to the caller as "${contentOf(text)}"`);
    });
  }

  // A streamed thinking_blocks that is one object, not a list, is a block too.
  test('buffered: thinking_blocks as one object is moderated', async () => {
    mock.replay = { sse: [chunk({ delta: { role: 'assistant', thinking_blocks: { type: 'thinking', thinking: 'how to make a bomb', signature: 'sig' } } }), chunk({ delta: { content: 'ok' } }), ...end] };
    const res = await chat('buffered', { stream: true });
    const text = await res.text();
    assert.equal(res.status, 422, text.slice(0, 400));
  });

  // Together's `seed` (a 19-digit number on every choice) is not text: a 16-digit rule must not read it.
  test('buffered, JSON: Together\'s choice seed is not moderated text', async () => {
    mock.replay = { json: { ...base, choices: [{ finish_reason: 'stop', index: 0, logprobs: null, message: { role: 'assistant', content: 'Saturn.' }, seed: 2387155844510162400 }], usage } };
    const res = await chat('buffered', {});
    assert.equal(res.status, 200, await res.text());
  });
  test('chunked, stream: Together\'s final chunk seed is not moderated text', async () => {
    mock.replay = { sse: [
      chunk({ delta: { role: 'assistant', content: 'Saturn.' }, text: 'Saturn.', seed: null, logprobs: null }),
      chunk({ delta: { content: '' }, text: '', seed: 2387155844510162400, logprobs: null, finish_reason: 'stop' }), { data: '[DONE]' }] };
    const res = await chat('chunked', { stream: true });
    const text = await res.text();
    assert.ok(res.status === 200 && !text.includes('content_blocked'), text);
  });

  // Chat clients read the same: a call's held arguments go out when the text after it begins, not with the finish.
  test('chunked: a call\'s held arguments go out when text follows the call, before the finish', async () => {
    mock.replay = { sse: [
      chunk({ delta: { role: 'assistant', content: 'Let me check.' } }),
      chunk({ delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":' } }] } }),
      chunk({ delta: { tool_calls: [{ index: 0, function: { arguments: '"Rome"}' } }] } }),
      // In the shape nearly every chunk has (index, delta, finish_reason), which chat relays unparsed (pushPlain).
      { data: { ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'One moment, please.' }, finish_reason: null }] } },
      chunk({ delta: {}, finish_reason: 'tool_calls' }), { data: '[DONE]' }] };
    const res = await chat('chunked', { stream: true });
    const chunks = (await res.text()).split('\n\n').filter((e) => e.startsWith('data: {')).map((e) => JSON.parse(e.slice(6)));
    const argsAt = chunks.map((c, i) => (c.choices?.[0]?.delta?.tool_calls?.some((t: any) => t.function?.arguments) ? i : -1)).filter((i) => i >= 0);
    const finishAt = chunks.findIndex((c) => c.choices?.[0]?.finish_reason);
    const args = chunks.flatMap((c) => c.choices?.[0]?.delta?.tool_calls ?? []).map((t: any) => t.function?.arguments ?? '').join('');
    assert.equal(args, '{"city":"Rome"}');
    assert.ok(argsAt.every((i) => i < finishAt), `arguments in chunks ${argsAt}, the finish in ${finishAt}`);
  });

  // OpenRouter's `native_finish_reason: null` on every choice says nothing: no empty chunk goes out for it.
  test('chunked: a null member beside the delta does not keep held-back chunks', async () => {
    const words = ['The', ' capital', ' of', ' France', ' is', ' Paris', '.'];
    mock.replay = { sse: [
      ...words.map((w, i) => chunk({ delta: i === 0 ? { role: 'assistant', content: w } : { content: w }, native_finish_reason: null })),
      chunk({ delta: {}, finish_reason: 'stop', native_finish_reason: 'stop' }), { data: '[DONE]' }] };
    const res = await chat('chunked', { stream: true });
    const text = await res.text();
    const empties = text.split('\n\n').filter((e) => e.startsWith('data: {')).map((e) => JSON.parse(e.slice(6)))
      .filter((c) => c.choices.length === 1 && Object.keys(c.choices[0].delta ?? {}).length === 0 && !c.choices[0].finish_reason).length;
    assert.equal(empties, 0, text);
  });
});
