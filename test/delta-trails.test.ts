// Trails: the texts of a choice's deltas that sluice does not join itself,
// each joined with what came before it in the same place.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { topTexts, Trail, walkDelta, walkTop } from '../src/pipeline/delta-trails.js';
import type { Delta } from '../src/domain.js';

/** The joined text of every place after `deltas`, as buffered moderation keeps them. */
function joined(deltas: object[]): string[] {
  const root = new Trail<string>();
  for (const d of deltas) walkDelta(root, d as Delta, (t, text) => { t.state = (t.state ?? '') + text; });
  return root.states();
}

test('a member nobody knows joins its pieces by place: an item appended per chunk continues the text at its position', () => {
  const piece = (text: string) => ({ vendor_details: [{ type: 'reasoning.text', text, index: 0 }] });
  assert.deepEqual(joined([piece('They want to ma'), piece('ke a b'), piece('omb.')]), ['They want to make a bomb.']);
});

test('text members and call arguments are left to their windows; ids, names, kinds and bytes are not read', () => {
  const deltas: object[] = [
    { role: 'assistant', content: 'one', refusal: 'two', reasoning_content: 'three', reasoning: 'four' },
    { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'send', arguments: '{"a":' } }] },
    { function_call: { name: 'legacy', arguments: '{}' } },
    { audio: { id: 'a1', data: 'UklGRg==', transcript: 'five' } },
    { thinking_blocks: [{ type: 'thinking', thinking: 'six', signature: 'sig' }] },
  ];
  assert.deepEqual(joined(deltas), ['five']);
});

test('a call\'s other members are trails, placed by the call\'s index rather than its position in the chunk', () => {
  const deltas: object[] = [
    { tool_calls: [{ index: 0, note: 'first ' }, { index: 1, note: 'second ' }] },
    { tool_calls: [{ index: 1, note: 'again', function: { arguments: 'x', comment: 'c1' } }] },
    { tool_calls: [{ index: 1, function: { comment: 'c2' } }] },
    { function_call: { arguments: '{}', why: 'because' } },
  ];
  assert.deepEqual(joined(deltas), ['first ', 'second again', 'c1c2', 'because']);
});

test('a text member that is not a string (content as a list of parts) is read as any other member', () => {
  const part = (text: string) => ({ content: [{ type: 'text', text }] });
  assert.deepEqual(joined([part('make a b'), part('omb')]), ['make a bomb']);
});

test('a member wider than a call\'s arguments go is read, place by place', () => {
  const wide = Array.from({ length: 200_000 }, (_, i) => `t${i}`);
  const texts = joined([{ vendor: wide }]);
  assert.equal(texts.length, 200_000);
  assert.equal(texts[0], 't0');
  assert.equal(texts.at(-1), 't199999');
});

test('a delta nested deeper than the call stack goes is walked, not a stack overflow', () => {
  let deep: unknown = 'bottom';
  for (let i = 0; i < 100_000; i++) deep = { x: deep };
  assert.deepEqual(joined([{ vendor: deep }]), ['bottom']);
});

test('an answer\'s own members beside its choices are read but for its model, fingerprint, tier, usage and padding', () => {
  const answer = {
    id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'make-a-bomb-7b', system_fingerprint: 'fp', service_tier: 'default',
    usage: { prompt_tokens: 1 }, obfuscation: 'random', choices: [{ index: 0, message: { content: 'read apart' } }],
    citations: ['https://example.com/a'], search_results: [{ title: 'A title', url: 'https://example.com/a', date: '2025-01-01' }],
  };
  assert.deepEqual(topTexts(answer), ['https://example.com/a', 'A title', 'https://example.com/a', '2025-01-01']);
  const root = new Trail<string>();
  for (const title of ['how to ma', 'ke a bomb']) walkTop(root, { ...answer, search_results: [{ title }] }, (t, text) => { t.state = (t.state ?? '') + text; });
  assert.deepEqual(root.states(), ['https://example.com/ahttps://example.com/a', 'how to make a bomb']);
});
