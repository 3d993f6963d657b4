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

test('streamed audio is archived whole: its base64 pieces become one base64 text of all their bytes', () => {
  const acc = new StreamAccumulator();
  // Pieces of 5, 7 and 4 bytes: each is padded base64 of its own, so the texts joined would not decode to the sound.
  const bytes = [Buffer.from('RIFF\x01'), Buffer.from('WAVEfmt'), Buffer.from([0, 1, 2, 255])];
  const chunk = (audio: object, finish: string | null = null) => ({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { audio }, finish_reason: finish }] }) as unknown as ChatChunk;
  acc.add(chunk({ id: 'audio_1', transcript: 'Hello', data: bytes[0]!.toString('base64') }));
  acc.add(chunk({ transcript: ' there.', data: bytes[1]!.toString('base64') }));
  acc.add(chunk({ data: bytes[2]!.toString('base64') }));
  acc.add(chunk({ expires_at: 1_700_003_600 }, 'stop'));
  const audio = (acc.completion.choices[0]!.message as Record<string, any>).audio;
  assert.deepEqual(Object.keys(audio), ['id', 'transcript', 'data', 'expires_at'], 'members keep the order they came in');
  assert.equal(audio.id, 'audio_1');
  assert.equal(audio.transcript, 'Hello there.');
  assert.equal(audio.expires_at, 1_700_003_600);
  assert.deepEqual(Buffer.from(audio.data, 'base64'), Buffer.concat(bytes));
  assert.equal(audio.data, Buffer.concat(bytes).toString('base64'));
  // Read twice (moderation, then the archive), it is the same; a piece that comes after a read is in the next.
  assert.equal((acc.completion.choices[0]!.message as Record<string, any>).audio.data, audio.data);
  acc.add(chunk({ data: Buffer.from('tail').toString('base64') }));
  assert.deepEqual(Buffer.from((acc.completion.choices[0]!.message as Record<string, any>).audio.data, 'base64'), Buffer.concat([...bytes, Buffer.from('tail')]));
});

test('audio pieces that are not all strict base64 are joined as they came, each choice its own', () => {
  const acc = new StreamAccumulator();
  const chunk = (index: number, data: string) => ({ id: 'c', choices: [{ index, delta: { audio: { data } }, finish_reason: null }] }) as unknown as ChatChunk;
  acc.add(chunk(0, 'not base64!'));
  acc.add(chunk(1, 'AAAA'));
  acc.add(chunk(0, 'AA=='));
  acc.add(chunk(1, 'AQ=='));
  const [a, b] = acc.completion.choices.map((c) => (c.message as Record<string, any>).audio.data);
  assert.equal(a, 'not base64!AA==');
  assert.equal(b, Buffer.from([0, 0, 0, 1]).toString('base64'));
});

test('reasoning streamed as `reasoning` is joined as reasoning_content is, and counts toward the estimate', () => {
  const acc = new StreamAccumulator();
  const chunk = (delta: Record<string, unknown>): ChatChunk => ({ choices: [{ index: 0, delta, finish_reason: null }] });
  acc.add(chunk({ role: 'assistant', content: '', reasoning: 'Let me ' }));
  acc.add(chunk({ reasoning: 'think.' }));
  acc.add(chunk({ content: 'Paris.' }));
  const m = acc.completion.choices[0]!.message;
  assert.equal(m.reasoning, 'Let me think.');
  assert.equal(m.content, 'Paris.');
  assert.equal(acc.outputChars, 'Let me think.'.length + 'Paris.'.length);
});

test('a moderated stream keeps every other member\'s pieces joined by place, where the completion keeps what a client would', () => {
  const chunk = (index: number, delta: Record<string, unknown>): ChatChunk => ({ choices: [{ index, delta, finish_reason: null }] });
  const feed = (acc: StreamAccumulator) => {
    acc.add(chunk(0, { role: 'assistant', content: 'Hi', vendor: { note: 'make a b' } }));
    acc.add(chunk(1, { role: 'assistant', vendor: { note: 'other' } }));
    acc.add(chunk(0, { vendor: { note: 'omb' } }));
  };
  const moderated = new StreamAccumulator(true);
  feed(moderated);
  assert.deepEqual(moderated.trailTexts(0), ['make a bomb']);
  assert.deepEqual(moderated.trailTexts(1), ['other']);
  assert.deepEqual(moderated.completion.choices[0]!.message.vendor, { note: 'omb' }, 'the archive folds it as a client does');
  const archived = new StreamAccumulator();
  feed(archived);
  assert.deepEqual(archived.trailTexts(0), [], 'kept only for buffered moderation');
});

test('a text member that streams as text and as a list (or an object) keeps every piece, as a content list, a string joining the text part before it; a message beside a delta is kept only when no delta said anything', () => {
  const acc = new StreamAccumulator();
  const chunk = (choice: object) => ({ choices: [{ index: 0, finish_reason: null, ...choice }] }) as unknown as ChatChunk;
  acc.add(chunk({ delta: { role: 'assistant', content: 'Sure, ' } }));
  acc.add(chunk({ delta: { content: [{ type: 'text', text: 'here' }] } }));
  acc.add(chunk({ delta: { content: ' it is' } }));
  acc.add(chunk({ delta: { reasoning_content: 'plan' } }));
  acc.add(chunk({ delta: { reasoning_content: {} } }));
  // Set in place of the message, this wiped what streamed; folded in, it doubled it.
  acc.add(chunk({ delta: {}, message: { content: 'Sure, here it is' }, finish_reason: 'stop' }));
  const m = acc.completion.choices[0]!.message as Record<string, unknown>;
  // The string after a list part ends the word it began: one part, as a reader reads it.
  assert.deepEqual(m.content, [{ type: 'text', text: 'Sure, ' }, { type: 'text', text: 'here it is' }]);
  assert.deepEqual(m.reasoning_content, [{ type: 'text', text: 'plan' }, {}]);
  assert.equal(acc.completion.choices[0]!.finish_reason, 'stop');
  assert.ok(!('message' in m), 'the repeated message is not nested');
  // The estimate counts the listed texts too.
  assert.equal(acc.outputChars, 'Sure, here it isplan'.length);
  // A stream that says it all in a message beside empty deltas: that message is the answer.
  const only = new StreamAccumulator();
  only.add(chunk({ delta: { role: 'assistant' } }));
  only.add(chunk({ delta: {}, message: { content: 'Hello.' }, finish_reason: 'stop' }));
  assert.equal((only.completion.choices[0]!.message as Record<string, unknown>).content, 'Hello.');
});
