// streamedTexts: what buffered moderation reads of a native Responses stream.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { streamedTexts } from '../src/pipeline/responses-common.js';
import type { StreamEvent } from '../src/domain.js';

const ev = (name: string, data: Record<string, unknown>): StreamEvent => ({ type: 'event', name, data: { type: name, ...data }, raw: '' });

test('text deltas are joined by item and part; an audio delta is bytes and is not read, its transcript is', () => {
  const texts = streamedTexts([
    ev('response.output_text.delta', { item_id: 'msg_1', content_index: 0, delta: 'make a b' }),
    ev('response.output_text.delta', { item_id: 'msg_1', content_index: 0, delta: 'omb' }),
    ev('response.audio.delta', { item_id: 'msg_2', delta: 'a2lsbA==' }),
    ev('response.audio.transcript.delta', { item_id: 'msg_2', delta: 'spoken ' }),
    ev('response.audio.transcript.delta', { item_id: 'msg_2', delta: 'words' }),
  ]);
  assert.deepEqual(texts, ['make a bomb', 'spoken words']);
});
