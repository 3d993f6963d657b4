// The bench prices production's shapes unless a switch turns one off: a run
// with none set must carry the SDK's headers, OpenAI's answer headers and its
// chunks, and `0` must turn a switch off (it once turned it on, as any set
// value did).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { shapeOn, shapesPriced } from '../bench/production-headers.js';

test('every production shape is on when no switch is set', () => {
  assert.equal(shapeOn('BENCH_SDK_HEADERS', {}), true);
  assert.equal(shapeOn('MOCK_OPENAI_HEADERS', {}), true);
  assert.equal(shapeOn('MOCK_OPENAI_CHUNKS', {}), true);
  assert.equal(shapesPriced({}), 'production shapes');
});

test('0, false, off, no and an empty value turn a switch off; anything else leaves it on', () => {
  for (const v of ['0', 'false', 'OFF', 'no', '', ' 0 ']) assert.equal(shapeOn('MOCK_OPENAI_CHUNKS', { MOCK_OPENAI_CHUNKS: v }), false, JSON.stringify(v));
  for (const v of ['1', 'true', 'yes', 'on']) assert.equal(shapeOn('MOCK_OPENAI_CHUNKS', { MOCK_OPENAI_CHUNKS: v }), true, v);
  // Each switch reads its own variable.
  assert.equal(shapeOn('MOCK_OPENAI_HEADERS', { MOCK_OPENAI_CHUNKS: '0' }), true);
});

test('a run says which shapes it left out', () => {
  assert.equal(shapesPriced({ BENCH_SDK_HEADERS: '0', MOCK_OPENAI_CHUNKS: 'off' }), 'production shapes but BENCH_SDK_HEADERS=0, MOCK_OPENAI_CHUNKS=0');
});
