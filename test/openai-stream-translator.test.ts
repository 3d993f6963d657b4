// The OpenAI-compatible stream translator forwards plain delta chunks
// unparsed; anything that may finish a choice, carry usage or an error is
// parsed. A wrong guess either way would lose a finish or waste the parse.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { streamTranslator } from '../src/providers/openai-compatible/stream.js';
import { disclosedBytes } from '../src/pipeline/chunked-output.js';
import { TailReader } from '../src/providers/openai-compatible/chunk-tail.js';

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

test('errors, spaced JSON and a new id are always parsed; a finish goes on unparsed, marked', () => {
  const t = streamTranslator();
  t.event(undefined, `${line('"role":"assistant"')},"finish_reason":null}]}`);
  const parsed = (data: string) => {
    const ev = t.event(undefined, data)[0]!;
    return ev.type === 'chunk' && !ev.plain;
  };
  const finishes = (data: string) => {
    const ev = t.event(undefined, data)[0]!;
    assert.ok(ev.type === 'chunk' && ev.plain, `plain: ${data}`);
    assert.deepEqual(ev.chunk, JSON.parse(data));
    return ev.finishes;
  };
  assert.equal(finishes(`${line('')},"finish_reason":"stop"}]}`), true, 'a finish');

  assert.ok(parsed(`{"id": "chatcmpl-1", "model": "m-1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}`), 'spaced JSON');
  assert.ok(parsed(`${line('"content":"x"', 'chatcmpl-2')},"finish_reason":null}]}`), 'another id');
  t.event(undefined, `${line('"role":"assistant"')},"finish_reason":null}]}`);
  assert.equal(finishes(`${line('"content":"x"')},"finish_reason":null},{"index":1,"delta":{},"finish_reason":"length"}]}`), true, 'a second choice finishing');
  assert.equal(finishes(`${line('"content":"x"')},"finish_reason":null},{"index":1,"delta":{"content":"y"},"finish_reason":null}]}`), false, 'two choices, neither finishing');
  assert.ok(parsed(`${line('"content":"x"')},"finish_reason":"stop","finish_reason":null}]}`), 'a repeated finish_reason: a parser keeps the last');
  assert.ok(parsed(`${line('"content":"x"')},"logprobs":{"finish_reason":"stop"},"finish_reason":null}]}`), 'a finish_reason string nested in a choice\'s member');
  assert.ok(parsed(`${line('"content":"x"')},"finish_reason":null}],"x":{"y":{"finish_reason":"stop"}}}`), 'a finish_reason string as deep as a choice\'s, past the choices');
  const err = t.event(undefined, '{"error":{"message":"overloaded"}}')[0]!;
  // An error with no status or known type is the provider's own failure: a 500.
  assert.deepEqual(err, { type: 'error', message: 'overloaded', upstream: { status: 500, details: { message: 'overloaded', type: undefined, param: null, code: null } } });
  assert.deepEqual(t.event(undefined, '[DONE]'), [{ type: 'done' }]);
});

test('the usage chunk goes on unparsed, its usage object alone parsed; usage anywhere else is left to a parse', () => {
  const t = streamTranslator();
  const head = '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m-1","choices":[';
  t.event(undefined, `${line('"role":"assistant"')},"finish_reason":null}]}`);
  const usage = { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } };
  const plainUsage = (data: string) => {
    const ev = t.event(undefined, data)[0]!;
    assert.ok(ev.type === 'chunk' && ev.plain, `plain: ${data}`);
    assert.deepEqual(ev.chunk, JSON.parse(data));
    return ev.usage;
  };
  assert.deepEqual(plainUsage(`${head}],"usage":${JSON.stringify(usage)}}`), usage);
  assert.deepEqual(plainUsage(`${head}],"usage":${JSON.stringify(usage)},"obfuscation":"x1"}`), usage, 'with OpenAI\'s pad after it');
  assert.deepEqual(plainUsage(`${head}{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}],"usage":{"total_tokens":2}}`), { total_tokens: 2 }, 'beside a finishing choice');
  assert.equal(plainUsage(`${line('"content":"x"')},"finish_reason":null}],"usage":null}`), undefined, 'usage: null');
  const parsed = (data: string) => {
    const ev = t.event(undefined, data)[0]!;
    return ev.type === 'chunk' && !ev.plain;
  };
  assert.ok(parsed(`${head}],"usage":null}`), 'no choice and no usage');
  assert.ok(parsed(`${head}{"index":0,"delta":{"content":"x"},"usage":{"total_tokens":2},"finish_reason":null}]}`), 'usage inside a choice');
  assert.ok(parsed(`${head}],"usage":{"total_tokens":2},"usage":{"total_tokens":3}}`), 'usage twice');
  assert.ok(parsed(`${head}],"usage":{"total_tokens":2},"usage":null}`), 'usage, then null: a parser keeps the null');
  assert.ok(parsed(`${head}],"usage":null,"usage":{"total_tokens":2}}`), 'null, then usage');
  assert.ok(parsed(`${head}],"usage":[1]}`), 'usage that is not an object');
  const bad = t.event(undefined, `${head}],"usage":{"total_tokens":tru}}`);
  assert.deepEqual(bad, [{ type: 'error', message: 'The upstream sent a malformed stream chunk.' }], 'a usage that is not JSON: parsed whole, and refused');
});

test('output bytes read off an unparsed chunk equal those of the parsed chunk: escapes, non-ASCII, tool arguments, refusals, reasoning', () => {
  const chunks = [
    { content: 'plain' },
    { content: 'quote " and \\ backslash, newline \n, tab \t' },
    { content: 'é, 漢字, emoji 😀 and \u0001' },
    { refusal: 'no, "not" that' },
    { content: null, reasoning_content: 'thinking: é and "quotes"' },
    { content: null, reasoning: 'as Ollama spells it: é' },
    { content: null, function_call: { name: 'send', arguments: '{"a":"é"}' } },
    { tool_calls: [{ index: 0, function: { arguments: '{"a":"b\\"c"' } }, { index: 1, function: { arguments: '1}' } }] },
    { content: null },
  ];
  for (const delta of chunks) {
    const chunk = { id: 'x', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: null }] };
    const raw = JSON.stringify(chunk);
    const from = raw.indexOf('"choices":[') + 11;
    assert.equal(new TailReader().bytes(raw, raw.slice(0, from)), disclosedBytes(chunk as never), JSON.stringify(delta));
  }
});

// A seeded generator, so a failure names the case that broke and reruns the same.
function rng(seed: number): () => number {
  return () => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed / 0x80000000; };
}

test('the one-pass tail reading agrees with parsing the chunk, on 5,000 generated chunks', () => {
  const r = rng(13);
  const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)]!;
  // Characters that take every path: ASCII, escapes JSON.stringify writes (quote, backslash, newline,
  // control characters as \u00XX), 2- and 3-byte characters, surrogate pairs and lone surrogates.
  const alphabet = ['a', ' ', '"', '\\', '\n', '\u0001', 'é', '漢', '😀', '\ud800', '\udc00', ':', ',', '}', ']', '{"usage":1}', '"finish_reason":"stop"'];
  const text = () => Array.from({ length: Math.floor(r() * 6) }, () => pick(alphabet)).join('');
  const maybe = <T>(v: T) => (r() < 0.5 ? v : undefined);
  let plainSeen = 0;
  // One reader for the whole run, as for one stream: most chunks then take the repeat-shape path.
  const reader = new TailReader();
  for (let n = 0; n < 5000; n++) {
    // Half the chunks have the shape of nearly every streamed chunk, one choice with only content.
    const typical = r() < 0.5;
    const choices = Array.from({ length: typical ? 1 : 1 + Math.floor(r() * 2) }, (_, index) => {
      const delta: Record<string, unknown> = {};
      if (typical) return { index, delta: { content: text() }, finish_reason: r() < 0.9 ? null : 'stop' };
      if (r() < 0.7) delta.content = r() < 0.9 ? text() : null;
      if (r() < 0.2) delta.refusal = text();
      if (r() < 0.2) delta.tool_calls = [{ index: 0, id: maybe(text()), function: { name: maybe(text()), arguments: text() } }];
      if (r() < 0.2) delta.role = 'assistant';
      const choice: Record<string, unknown> = { index, delta };
      if (r() < 0.3) choice.logprobs = { content: [{ token: text(), logprob: -0.5, bytes: [1, 2] }], refusal: null };
      choice.finish_reason = r() < 0.8 ? null : pick(['stop', 'length', 'tool_calls']);
      return choice;
    });
    const chunk: Record<string, unknown> = { id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices };
    if (!typical && r() < 0.2) chunk.usage = r() < 0.5 ? null : { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
    if (!typical && r() < 0.1) chunk.future = { usage: r() < 0.5 ? null : 3, nested: [text()] };
    // OpenAI's pad, last, on most chunks: random text, here with escapes and keys of its own at times.
    if (r() < 0.6) chunk.obfuscation = r() < 0.8 ? 'x'.repeat(Math.floor(r() * 8)) : text();
    const raw = JSON.stringify(chunk);
    const from = raw.indexOf('"choices":[') + 11;
    const nested = chunk.future as { usage: unknown } | undefined;
    const plain = nested === undefined || nested.usage === null;
    const prefix = raw.slice(0, from);
    const got = reader.bytes(raw, prefix);
    assert.equal(got, new TailReader().bytes(raw, prefix), `the repeat-shape path and a full walk agree on ${raw}`);
    if (!plain) {
      assert.equal(got, -1, `not plain: ${raw}`);
      continue;
    }
    plainSeen++;
    assert.equal(got, disclosedBytes(chunk as never), `bytes of ${raw}`);
    assert.equal(reader.finished, choices.some((c) => c.finish_reason !== null), `finished: ${raw}`);
    assert.deepEqual(reader.usageFrom < 0 ? null : JSON.parse(raw.slice(reader.usageFrom, reader.usageTo)), chunk.usage ?? null, `usage: ${raw}`);
  }
  assert.ok(plainSeen > 1000, `enough plain chunks were generated (${plainSeen})`);
});

test('the translator\'s events agree with parsing each chunk: plain or not, its finish and its usage, on 3,000 generated streams', () => {
  const r = rng(29);
  const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)]!;
  const words = ['a', 'b c', 'é', '"q"', '\\', '😀', '"finish_reason":"stop"', '"usage":{"x":1}', '{"obfuscation":"x"}'];
  const text = () => Array.from({ length: Math.floor(r() * 4) }, () => pick(words)).join('');
  let plainSeen = 0;
  for (let s = 0; s < 3000; s++) {
    const t = streamTranslator();
    const head = { id: `c${s}`, object: 'chat.completion.chunk', created: 1, model: 'm', ...(r() < 0.5 ? { service_tier: 'default', system_fingerprint: 'fp' } : {}) };
    const padded = r() < 0.5;
    const chunks: object[] = [{ ...head, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] }];
    for (let k = 0; k < 6; k++) {
      const delta = r() < 0.2 ? { reasoning_content: text() } : { content: text() };
      chunks.push({ ...head, choices: [{ index: 0, delta, ...(r() < 0.5 ? { logprobs: null } : {}), finish_reason: r() < 0.1 ? 'length' : null }] });
    }
    chunks.push({ ...head, choices: [{ index: 0, delta: {}, finish_reason: pick(['stop', 'tool_calls']) }] });
    chunks.push({ ...head, choices: [], usage: r() < 0.8 ? { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3, details: { cached: [text()] } } : null });
    for (const c of chunks) {
      const obj: Record<string, unknown> = padded ? { ...c, usage: (c as { usage?: unknown }).usage ?? null, obfuscation: text() } : { ...c };
      const data = JSON.stringify(obj);
      const ev = t.event(undefined, data)[0]!;
      assert.equal(ev.type, 'chunk', data);
      if (ev.type !== 'chunk') continue;
      const parsed = JSON.parse(data);
      assert.deepEqual(ev.chunk, parsed, data);
      if (!ev.plain) continue;
      plainSeen++;
      assert.equal(ev.finishes, parsed.choices.some((ch: { finish_reason: unknown }) => ch.finish_reason !== null), `finishes: ${data}`);
      assert.deepEqual(ev.usage ?? null, parsed.usage ?? null, `usage: ${data}`);
      assert.equal(ev.outputBytes, disclosedBytes(parsed), `bytes: ${data}`);
    }
  }
  assert.ok(plainSeen > 15_000, `most chunks went unparsed (${plainSeen})`);
});

test('text the one-pass reading cannot vouch for is left to the parser', () => {
  const head = '{"id":"c","choices":[';
  const tail = (t: string) => new TailReader().bytes(head + t, head);
  assert.equal(tail('{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}'), 2);
  assert.equal(tail('{"index":0,"delta":{"content":"hi"},"finish_reason" :null}]}'), -1, 'a spaced key');
  assert.equal(tail('{"index":0,"delta":{"content":"hi"}, "finish_reason":null}]}'), 2, 'space between members hides no key');
  assert.equal(tail('{"index":0,"delta":{"content":"hi"},"finish_reason":null},{"index":1,"delta":{},"finish_re\\u0061son":"stop"}]}'), -1, 'an escaped key');
  assert.equal(tail('{"index":0,"delta":{"content":"hi"}}]}'), -1, 'no finish_reason at all');
  assert.equal(tail('{"index":0,"delta":{"content":"hi'), -1, 'cut off inside a string');
  assert.equal(tail('{"index":0,"delta":{"content":"hi"},"finish_reason":null}]'), -1, 'cut off before its close');
  assert.equal(tail('{"index":0,"delta":{"content":"hi"},"finish_reason":null}},"finish_reason":null}]}'), -1, 'a choice closed twice');
  assert.equal(tail('{"index":0,"delta":{"content":"\\u12"},"finish_reason":null}]}'), -1, 'a broken escape');
  assert.equal(tail('{"index":0,"delta":{"content":"a\\"b"},"logprobs":{"content":[{"token":"\\n"}]},"finish_reason":null}]}'), 3, 'escapes elsewhere are fine');
});

test('a chunk that repeats the last tail around a string that does not close where it did is walked in full', () => {
  const head = '{"id":"c","choices":[';
  const reader = new TailReader();
  const tail = (t: string) => reader.bytes(head + t, head);
  assert.equal(tail('{"index":0,"delta":{"content":"hello"},"finish_reason":null}]}'), 5);
  assert.equal(tail('{"index":0,"delta":{"content":"hi é"},"finish_reason":null}]}'), 5, 'the same shape: only the text is read');
  assert.equal(tail('{"index":0,"delta":{"content":"a"},"finish_reason":"stop","x":"b"},"finish_reason":null}]}'), -1, 'a finish hidden between the same two ends, in text that is no chunk');
  assert.equal(tail('{"index":0,"delta":{"content":"a"},"x":{"finish_reason":"stop","x":"b"},"finish_reason":null}]}'), -1, 'a finish hidden between the same two ends, nested');
  assert.equal(tail('{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}'), 1, 'a finish of its own: a new shape, walked');
  assert.equal(reader.finished, true);
  assert.equal(tail('{"index":0,"delta":{"content":"bc"},"finish_reason":"stop"}]}'), 2, 'the same shape, finishing as the learned one did');
  assert.equal(reader.finished, true);
  assert.equal(tail('{"index":0,"delta":{"content":"a\\"},"finish_reason":null}]}'), -1, 'a text whose last quote is escaped never closes');
  assert.equal(tail('{"index":0,"delta":{"content":"x\\\\"},"finish_reason":null}]}'), 2, 'an escaped backslash before the quote: it closes');
  assert.equal(tail('{"index":0,"delta":{"content":"\\ud83d\\ude00"},"finish_reason":null}]}'), 4, 'a pair of escaped surrogates is one 4-byte character');
  const next = '{"id":"d","choices":[';
  assert.equal(reader.bytes(head + '{"index":0,"delta":{"content":"x"},"finish_reason":null}]}', next), -1, 'a new head: the last chunk\'s text no longer vouches');
});

test('OpenAI\'s chunks, each ending with an obfuscation string of its own, are read by their text alone after the first', () => {
  const head = '{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","service_tier":"default","system_fingerprint":"fp_1","choices":[';
  const chunk = (text: string, pad: string, finish = 'null') => `${head}{"index":0,"delta":{"content":${JSON.stringify(text)}},"logprobs":null,"finish_reason":${finish}}],"usage":null,"obfuscation":${JSON.stringify(pad)}}`;
  const reader = new TailReader();
  let walks = 0;
  const walk = (reader as unknown as { walk: (s: string, from: number) => number }).walk;
  (reader as unknown as { walk: typeof walk }).walk = function (this: TailReader, s: string, from: number) { walks++; return walk.call(this, s, from); };
  const read = (raw: string) => reader.bytes(raw, head);
  assert.equal(read(chunk('Hello', 'q1Zx')), 5);
  assert.equal(walks, 1);
  const pads = ['', 'a', 'Zk3', 'x9a8b7c6d5e4f3g2h1'];
  for (const [i, text] of ['Hi', ' there é', '漢字', ''].entries()) assert.equal(read(chunk(text, pads[i]!)), Buffer.byteLength(text), text);
  assert.equal(walks, 1, 'every later chunk was read against the learned one, its obfuscation aside');
  // Anything but a plain string closing the object where the pad stands is walked, and judged as a walk judges it.
  assert.equal(read(chunk('a', 'x', '"stop"')), 1, 'a finish: walked, and plain');
  assert.equal(reader.finished, true);
  assert.equal(read(`${head}{"index":0,"delta":{"content":"a"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"x","finish_reason":"stop"}`), -1, 'a member after the pad');
  assert.equal(read(`${head}{"index":0,"delta":{"content":"a"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"x","usage":{"total_tokens":1}}`), -1, 'usage after the pad');
  const walked = walks;
  assert.equal(read(chunk('ab', 'q\\"r')), 2, 'a pad with escapes is walked, and is plain');
  assert.equal(walks, walked + 1);
  assert.equal(read(`${head}{"index":0,"delta":{"content":"ab"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"x"`), -1, 'cut off before its close');
  assert.equal(read(`${head}{"index":0,"delta":{"content":"ab"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"x}`), -1, 'a pad that never closes');
  // A chunk without a pad, after padded ones, is walked and learned anew.
  assert.equal(read(`${head}{"index":0,"delta":{"content":"ab"},"logprobs":null,"finish_reason":null}],"usage":null}`), 2);
});

/**
 * What a stream still holds once a 32 MB chunk it has read is dropped: read as
 * its first chunk (parsed: the stream's head is cut from it) or, with
 * `second`, after one (plain: the chunk reader learns its tail from it).
 */
function heldAfterBigChunk(second: boolean): number {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const t = streamTranslator();
  if (second) t.event(undefined, `${line('"role":"assistant"')},"finish_reason":null}]}`);
  gc();
  const baseline = process.memoryUsage().heapUsed;
  let big: string | undefined = `${line(`"content":"${'x'.repeat(32 << 20)}"`)},"finish_reason":null}]}`;
  // The event is not kept (a local would be, to the end of this frame): only what the translator kept may stay.
  const plain = (data: string): boolean => { const ev = t.event(undefined, data)[0]!; return ev.type === 'chunk' && !!ev.plain; };
  assert.equal(plain(big), second, second ? 'read as plain' : 'parsed');
  big = undefined;
  gc();
  const held = process.memoryUsage().heapUsed - baseline;
  // The stream goes on, read against what it kept.
  const next = t.event(undefined, `${line('"content":"y"')},"finish_reason":null}]}`)[0]!;
  assert.ok(next.type === 'chunk' && next.plain && next.plain.prefix.startsWith('{"id":"chatcmpl-1"'));
  return held;
}

test('a stream keeps none of a chunk it has read: a 32 MB delta, first (the head) or plain (the learned tail), is freed while the stream goes on', () => {
  for (const second of [false, true]) {
    const held = heldAfterBigChunk(second);
    assert.ok(held < 8 << 20, `${second ? 'a plain' : 'the first'} chunk: the stream still holds ${(held / 2 ** 20).toFixed(1)} MB`);
  }
});
