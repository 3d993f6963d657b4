// The stream accumulator folds every member a chunk carries into the
// completion the payload archive stores: a member named "__proto__" is a
// member like any other, never the object's prototype.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StreamAccumulator } from '../src/pipeline/chat-accumulator.js';
import type { ChatChunk } from '../src/domain.js';

test('a "__proto__" member of a chunk, a choice or a delta is folded as a member', () => {
  const acc = new StreamAccumulator();
  const chunk = (extra: string) => JSON.parse(`{"id":"c","__proto__":{"top":1},"choices":[{"index":0,"__proto__":{"choice":1},"delta":{"content":"${extra}","__proto__":["d"]},"finish_reason":null}]}`) as ChatChunk;
  acc.add(chunk('a'));
  acc.add(chunk('b'));
  const done = acc.completion as Record<string, any>;
  assert.deepEqual(Object.getOwnPropertyDescriptor(done, '__proto__')?.value, { top: 1 });
  assert.equal(Object.getPrototypeOf(done), Object.prototype);
  const choice = done.choices[0];
  assert.deepEqual(Object.getOwnPropertyDescriptor(choice, '__proto__')?.value, { choice: 1 });
  assert.equal(choice.message.content, 'ab');
  assert.deepEqual(Object.getOwnPropertyDescriptor(choice.message, '__proto__')?.value, ['d', 'd'], 'a delta array is appended');
  assert.equal(Object.getPrototypeOf(choice.message), Object.prototype);
});
