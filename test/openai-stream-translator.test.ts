// The OpenAI-compatible stream translator forwards plain delta chunks
// unparsed; anything that may finish a choice, carry usage or an error is
// parsed. A wrong guess either way would lose a finish or waste the parse.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { streamTranslator } from '../src/providers/openai-compatible/stream.js';
import { disclosedBytes, rawOutputBytes } from '../src/pipeline/chunked-output.js';

const line = (extra: string, id = 'chatcmpl-1') => `{"id":"${id}","object":"chat.completion.chunk","created":1,"model":"m-1","choices":[{"index":0,"delta":{${extra}}`;

test('after the first parsed chunk, content-only chunks are passed on unparsed, and parse to the same object on demand', () => {
  const t = streamTranslator();
  const first = t.event(undefined, `${line('"role":"assistant","content":""')},"finish_reason":null}]}`)[0]!;
  assert.equal(first.type === 'chunk' && first.plain, undefined, 'the first chunk is parsed: the stream id is not known yet');
  const raw = `${line('"content":"he said \\"hi\\""')},"logprobs":null,"finish_reason":null}],"usage":null,"future":{"x":[1]}}`;
  const ev = t.event(undefined, raw)[0]!;
  assert.ok(ev.type === 'chunk' && ev.plain, 'a plain delta is not parsed');
  assert.deepEqual(ev.plain, { id: 'chatcmpl-1', model: 'm-1', prefix: '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m-1","choices":[' });
  assert.equal(ev.raw, raw);
  assert.deepEqual(ev.chunk, JSON.parse(raw));
});

test('finishes, usage, errors, spaced JSON and a new id are always parsed', () => {
  const t = streamTranslator();
  t.event(undefined, `${line('"role":"assistant"')},"finish_reason":null}]}`);
  const parsed = (data: string) => {
    const ev = t.event(undefined, data)[0]!;
    return ev.type === 'chunk' && !ev.plain;
  };
  assert.ok(parsed(`${line('')},"finish_reason":"stop"}]}`), 'a finish');
  assert.ok(parsed(`${line('"content":"x"')},"finish_reason":null}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`), 'usage');
  assert.ok(parsed(`{"id": "chatcmpl-1", "model": "m-1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}`), 'spaced JSON');
  assert.ok(parsed(`${line('"content":"x"', 'chatcmpl-2')},"finish_reason":null}]}`), 'another id');
  t.event(undefined, `${line('"role":"assistant"')},"finish_reason":null}]}`);
  assert.ok(parsed(`${line('"content":"x"')},"finish_reason":null},{"index":1,"delta":{},"finish_reason":"length"}]}`), 'a second choice finishing');
  assert.ok(!parsed(`${line('"content":"x"')},"finish_reason":null},{"index":1,"delta":{"content":"y"},"finish_reason":null}]}`), 'two choices, neither finishing');
  const err = t.event(undefined, '{"error":{"message":"overloaded"}}')[0]!;
  assert.deepEqual(err, { type: 'error', message: 'overloaded' });
  assert.deepEqual(t.event(undefined, '[DONE]'), [{ type: 'done' }]);
});

test('output bytes read off an unparsed chunk equal those of the parsed chunk: escapes, non-ASCII, tool arguments, refusals', () => {
  const chunks = [
    { content: 'plain' },
    { content: 'quote " and \\ backslash, newline \n, tab \t' },
    { content: 'é, 漢字, emoji 😀 and \u0001' },
    { refusal: 'no, "not" that' },
    { tool_calls: [{ index: 0, function: { arguments: '{"a":"b\\"c"' } }, { index: 1, function: { arguments: '1}' } }] },
    { content: null },
  ];
  for (const delta of chunks) {
    const chunk = { id: 'x', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: null }] };
    const raw = JSON.stringify(chunk);
    const from = raw.indexOf('"choices":[') + 11;
    assert.equal(rawOutputBytes(raw, from), disclosedBytes(chunk as never), JSON.stringify(delta));
  }
});
