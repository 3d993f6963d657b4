// Token counts an upstream reports feed cost, limits and the trace: only finite
// counts of at least zero are taken.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chargeable, readUsage } from '../src/providers/openai-compatible/response.js';
import { completionUsage } from '../src/pipeline/chat-output.js';
import { chatUsageOf } from '../src/pipeline/responses-common.js';

test('a count that is not a finite number of tokens at least 0 reads as 0', () => {
  const u = JSON.parse('{"prompt_tokens":1e999,"completion_tokens":-40,"total_tokens":"7"}');
  assert.deepEqual(readUsage(u), { prompt_tokens: 0, completion_tokens: 0, total_tokens: 7 });
  assert.deepEqual(readUsage({ prompt_tokens: 12.9, completion_tokens: '3', total_tokens: null }), { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 });
});

test('counts are capped where the trace stores them, and the total is never less than its parts', () => {
  // The cost priced 2^53 tokens while the trace stored 2^31 - 1 and a total of 7: tokens and cost disagreed.
  const max = 2 ** 31 - 1;
  assert.deepEqual(readUsage({ prompt_tokens: NaN, completion_tokens: 2 ** 80 }), { prompt_tokens: 0, completion_tokens: max, total_tokens: max });
  assert.deepEqual(readUsage({ prompt_tokens: 1e30, completion_tokens: -5, total_tokens: '7' }), { prompt_tokens: max, completion_tokens: 0, total_tokens: max });
  assert.deepEqual(readUsage({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 3 }), { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 });
  assert.deepEqual(readUsage({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 20 }), { prompt_tokens: 10, completion_tokens: 5, total_tokens: 20 });
});

test('a usage is charged only when both counts are numbers of tokens; otherwise the estimate is (chat and native Responses alike)', () => {
  assert.equal(chargeable({ prompt_tokens: 3, completion_tokens: 0 }), true);
  for (const u of [undefined, null, [], {}, { prompt_tokens: 3 }, { prompt_tokens: '3', completion_tokens: 1 }, { prompt_tokens: 3, completion_tokens: Infinity }, { prompt_tokens: -1, completion_tokens: 1 }]) {
    assert.equal(chargeable(u), false, JSON.stringify(u));
  }
  assert.deepEqual(chatUsageOf({ input_tokens: 4, output_tokens: 2 }), { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 });
  assert.equal(chatUsageOf({ input_tokens: 'x', output_tokens: 2 }), undefined);
  assert.equal(completionUsage(7, { choices: [{ index: 0, message: { role: 'assistant', content: 'abcdefgh' } }], usage: { prompt_tokens: 'x' } } as any).completion_tokens, 2);
});
