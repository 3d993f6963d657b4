// shownTexts: what output moderation reads of an answer, deny by default.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { shownTexts } from '../src/policy/shown-texts.js';

test('every string and number in document order, but ids, kinds, names, bytes, seals, log probabilities and token ids', () => {
  const message = {
    role: 'assistant', content: 'one', refusal: null, reasoning_content: 'two',
    tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'send', arguments: 'three' } }],
    audio: { id: 'audio_1', data: 'UklGRg==', expires_at: 1, format: 'wav', transcript: 'four' },
    thinking_blocks: [{ type: 'thinking', thinking: 'five', signature: 'sig' }, { type: 'redacted_thinking', data: 'sealed' }],
    extra_content: { google: { thought_signature: 'sig2' } },
    logprobs: { content: [{ token: 'x' }] },
    future: { nested: [{ deep: 'six' }, 7, true, ''] },
    token_ids: [128000, 9906],
  };
  assert.deepEqual(shownTexts(message, []), ['one', 'two', 'three', 'four', 'five', 'six', '7']);
  // A number where text belongs is shown as its digits.
  assert.deepEqual(shownTexts({ content: 4111111111111111 }, []), ['4111111111111111']);
});

test('an answer nested deeper than the call stack goes is read, not a stack overflow', () => {
  let deep: unknown = 'bottom';
  for (let i = 0; i < 200_000; i++) deep = { x: deep };
  assert.deepEqual(shownTexts(deep, []), ['bottom']);
});

test('a "__proto__" member is read like any other', () => {
  assert.deepEqual(shownTexts(JSON.parse('{"__proto__":{"text":"hidden"}}'), []), ['hidden']);
});
