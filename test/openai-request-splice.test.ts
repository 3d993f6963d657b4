// The OpenAI-compatible chat body made by splicing the caller's text must mean
// exactly what the re-serialised body means, for any body JSON.parse accepts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ChatRequest, UpstreamTarget } from '../src/domain.js';
import { parseChatRequest } from '../src/pipeline/chat-request.js';
import { keysReadOneWay } from '../src/providers/json-keys.js';
import { memberSpans, withInnerMembers, withMembers } from '../src/providers/json-members.js';
import { chatRequest } from '../src/providers/openai-compatible/request.js';

const target: UpstreamTarget = { kind: 'openai', provider: 'openai', baseUrl: 'http://up.invalid/v1', model: 'gpt-"4o"\\mini', apiKey: 'k' };

function both(text: string): { spliced: string; serialised: string } {
  const chat = parseChatRequest(JSON.parse(text) as Record<string, unknown>);
  const spliced = chatRequest(target, { ...chat, rawText: text } as ChatRequest).body;
  const serialised = chatRequest(target, chat).body;
  return { spliced, serialised };
}

/** What the re-serialised body drops and the spliced one keeps as the caller wrote it. */
function withoutFalseStream(v: Record<string, unknown>): Record<string, unknown> {
  if (v.stream !== false) return v;
  const { stream: _s, ...rest } = v;
  return rest;
}

const bodies: Record<string, string> = {
  'model first, compact': '{"model":"m","messages":[{"role":"user","content":"hi"}]}',
  'model last, spaced': ' {\n\t"messages" : [ { "role" : "user" , "content" : "a } ] { [ \\" \\\\" } ] ,\r\n "model" : "m" } ',
  'escaped quotes before the model': '{"messages":[{"role":"user","content":"say \\"model\\": \\"x\\", \\\\"}],"model":"m","temperature":0.5}',
  'nested objects and arrays': '{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"[{]}"}]}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"array","items":{}}}}}}],"logit_bias":{"1":-1},"metadata":{}}',
  'scalars of every kind': '{"n":2,"seed":-7,"top_p":1e-3,"logprobs":true,"metadata":null,"model":"m","messages":[{"role":"user","content":null}],"x":false}',
  'unicode and escapes': '{"model":"m","messages":[{"role":"user","content":"é 漢字 😀 \\u00e9 \\ud83d\\ude00 \\n\\t\\/"}]}',
  'a stream without options': '{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}',
  'a stream with other options': '{"stream_options":{"foo":1},"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}',
  'a stream already asking for usage': '{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}',
  'a stream refusing usage': '{"model":"m","stream":true,"stream_options":{"include_usage":false},"messages":[{"role":"user","content":"x"}]}',
  'stream false': '{"model":"m","stream":false,"messages":[{"role":"user","content":"x"}]}',
  'an unknown field from the future': '{"model":"m","messages":[{"role":"user","content":"x"}],"future_field":{"deep":[1,{"a":"]"}]}}',
};

describe('the spliced OpenAI-compatible chat body', () => {
  for (const [name, text] of Object.entries(bodies)) {
    test(`${name}: means what the re-serialised body means`, () => {
      const { spliced, serialised } = both(text);
      const sent = text;
      // The caller's own text of every other member is in the body (re-serialising would normalise some).
      for (const [key, [start, end]] of memberSpans(sent)!) {
        if (key !== 'model' && key !== 'stream_options') assert.ok(spliced.includes(sent.slice(start, end)), key);
      }
      assert.deepEqual(withoutFalseStream(JSON.parse(spliced) as Record<string, unknown>), JSON.parse(serialised));
    });
  }

  test('keeps the caller\'s bytes apart from the replaced values', () => {
    const text = '{"model":"m", "messages":[{"role":"user","content":"1.0e+2 \\u00e9"}],"temperature":1.0}';
    assert.equal(both(text).spliced, `{"model":${JSON.stringify(target.model)}, "messages":[{"role":"user","content":"1.0e+2 \\u00e9"}],"temperature":1.0}`);
  });

  test('a small body is spliced too: its numbers stay as the caller wrote them', () => {
    const text = '{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":1.0}';
    const chat = parseChatRequest(JSON.parse(text) as Record<string, unknown>);
    assert.equal(chatRequest(target, { ...chat, rawText: text }).body, `{"model":${JSON.stringify(target.model)},"messages":[{"role":"user","content":"x"}],"temperature":1.0}`);
  });

  test('falls back to re-serialising where splicing would disagree with JSON.parse', () => {
    for (const text of [
      '{"model":"a","messages":[{"role":"user","content":"x"}],"model":"b"}', // repeated key: JSON.parse keeps the last
      '{"mod\\u0065l":"a","messages":[{"role":"user","content":"x"}]}', // escaped key
      '{"model":"m","stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}', // dropped without a stream
    ]) {
      const { spliced, serialised } = both(text);
      assert.equal(spliced, serialised, text);
    }
  });
});

describe('memberSpans', () => {
  test('finds every top-level member, whatever its value holds', () => {
    const text = '{ "a" : "x\\"}" , "b":[1,[2],{"c":"]"}],"d":{"e":{}} ,"f":-1.5e3,"g":true,"h":null}';
    const spans = memberSpans(text)!;
    const values = Object.fromEntries([...spans].map(([k, [s, e]]) => [k, JSON.parse(text.slice(s, e)) as unknown]));
    assert.deepEqual(values, JSON.parse(text));
    assert.deepEqual(memberSpans('{}'), new Map());
    assert.equal(memberSpans('[1]'), undefined);
  });

  test('a repeated key is refused however many members come before it; keys of one length that differ are not repeats', () => {
    // Past a few dozen members repeats are looked up in a set, not compared in place: both ways must agree.
    for (const n of [3, 31, 32, 33, 200]) {
      const members = Array.from({ length: n }, (_, i) => `"k${i}":${i}`);
      const text = `{${members.join(',')}}`;
      assert.equal(memberSpans(text)?.size, n, `${n} distinct keys`);
      assert.equal(memberSpans(`{${members.join(',')},"k${n - 1}":0}`), undefined, `the last of ${n} repeated`);
      assert.equal(memberSpans(`{${members.join(',')},"k0":0}`), undefined, `the first of ${n} repeated`);
      assert.equal(withMembers(`{${members.join(',')},"k0":0}`, { model: 'm' }), undefined);
    }
    assert.deepEqual([...memberSpans('{"ab":1,"ba":2,"a":3,"b":4}')!.keys()], ['ab', 'ba', 'a', 'b']);
  });

  test('withMembers replaces the members the text has and appends the others, leaving the rest as written', () => {
    const text = ' { "b" : 1.0 , "a":"x\\u00e9", "c": [ 1 ] } ';
    assert.equal(withMembers(text, { c: { d: null }, a: 'é', e: 2 }), ' { "b" : 1.0 , "a":"é", "c": {"d":null} ,"e":2} ');
    assert.equal(withMembers('{}', { a: 1, b: 'x' }), '{"a":1,"b":"x"}');
    assert.equal(withMembers('{"a":1,"a":2}', { a: 3 }), undefined);
    assert.equal(withMembers('{"a":1}', { b: undefined }), undefined);
  });

  test('withMembers writes a string value as JSON.stringify would, whatever it holds', () => {
    for (const v of ['chatcmpl_0123abcd', 'gpt-4o-mini', '', ' ~!#[]{}', 'quo"te', 'back\\slash', 'tab\t', '\x7f', '\x1f', 'é', '\u2028', '\ud800', '\ud83d\ude00']) {
      assert.equal(withMembers('{"a":0,"b":1}', { b: v, a: v }), `{"a":${JSON.stringify(v)},"b":${JSON.stringify(v)}}`, JSON.stringify(v));
      assert.equal(withMembers('{}', { [v]: v }), `{${JSON.stringify(v)}:${JSON.stringify(v)}}`);
    }
  });

  test('withInnerMembers sets members inside one member\'s object and nowhere else', () => {
    const text = '{"type":"response.created","sequence_number":0 ,"response": {"model":"up","t":1.0,"n":{"model":"keep"}} ,"model":"outer"}';
    assert.equal(withInnerMembers(text, 'response', { model: 'gw', g: [1] }), '{"type":"response.created","sequence_number":0 ,"response": {"model":"gw","t":1.0,"n":{"model":"keep"},"g":[1]} ,"model":"outer"}');
    assert.equal(withInnerMembers('{"response":[1]}', 'response', { model: 'gw' }), undefined);
    assert.equal(withInnerMembers('{"other":{}}', 'response', { model: 'gw' }), undefined);
    assert.equal(withInnerMembers('{"response":{"a":1,"a":2}}', 'response', { a: 3 }), undefined);
  });
});

describe('keysReadOneWay', () => {
  test('every body above reads one way', () => {
    for (const text of Object.values(bodies)) assert.equal(keysReadOneWay(text), true, text);
  });

  test('a key repeated in any object, or spelled with an escape, is refused', () => {
    for (const text of [
      '{"a":1,"a":2}',
      '{"messages":[{"role":"user","content":"secret","content":"hi"}]}',
      '{"m":[[{"x":{"y":1, "z":[{}], "y" :2}}]]}',
      '{"messages":[{"role":"user","con\\u0074ent":"hi"}]}',
      '{"messages":[{"ro\\"le":"user"}]}',
    ]) {
      JSON.parse(text);
      assert.equal(keysReadOneWay(text), false, text);
    }
  });

  test('the same key in different objects, or inside strings, is not a repeat', () => {
    for (const text of [
      '{"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}]}',
      '{"a":"\\"a\\":1,\\"a\\":2","b":"{\\"c\\":[1,2],"}',
      '{"a":[],"b":{},"c":[{},[]],"d":"]}"}',
      ' { } ', '[1,{"a":1},{"a":1}]', '"a"', '12',
    ]) {
      JSON.parse(text);
      assert.equal(keysReadOneWay(text), true, text);
    }
  });

  test('deep nesting is walked without the call stack', () => {
    const depth = 100_000;
    const deep = '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
    assert.equal(keysReadOneWay(deep), true);
    assert.equal(keysReadOneWay('{"a":'.repeat(depth) + '{"b":1,"b":2}' + '}'.repeat(depth)), false);
  });
});

test('keysReadOneWay compares a small object\'s keys in place and a large one\'s in a Set: both find a repeat, anywhere', () => {
  const object = (n: number, extra = '') => `{${Array.from({ length: n }, (_, i) => `"k${i}":${i}`).join(',')}${extra}}`;
  for (const n of [3, 16, 17, 40]) {
    assert.equal(keysReadOneWay(object(n)), true, `${n} keys`);
    assert.equal(keysReadOneWay(object(n, ',"k0":0')), false, `${n} keys and the first again`);
    assert.equal(keysReadOneWay(object(n, `,"k${n - 1}":0`)), false, `${n} keys and the last again`);
    // The same keys in sibling and nested objects are not repeats.
    assert.equal(keysReadOneWay(`{"a":${object(n)},"b":[${object(n)},${object(n)}]}`), true, `${n} keys, nested`);
    assert.equal(keysReadOneWay(`{"a":[${object(n)},${object(n, ',"k1":1')}]}`), false, `${n} keys, nested repeat`);
  }
});
