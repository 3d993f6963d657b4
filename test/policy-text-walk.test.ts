// The text walker every input guard uses: it must hand each string to the
// scan and put the scan's result back in the same place, whatever the keys.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mapArguments, mapJson } from '../src/policy/text-walk.js';

const redact = (t: string) => t.replace(/[a-z]+@example\.com/g, '[EMAIL]');

test('a member named "__proto__" is redacted in place: the copy holds it as its own member, so it is not taken for the prototype', () => {
  const args = '{"__proto__":{"to":"alice@example.com"},"cc":"bob@example.com"}';
  assert.equal(mapArguments(args, redact), '{"__proto__":{"to":"[EMAIL]"},"cc":"[EMAIL]"}');
  const value = JSON.parse('{"a":[{"__proto__":"carol@example.com"}]}');
  const mapped = mapJson(value, redact) as { a: Array<Record<string, unknown>> };
  assert.equal(Object.getOwnPropertyDescriptor(mapped.a[0], '__proto__')?.value, '[EMAIL]');
  assert.equal(Object.getPrototypeOf(mapped.a[0]), Object.prototype);
  // Nothing changed: the very same objects come back.
  assert.equal(mapJson(value, (t) => t), value);
});

test('keys are texts: a redacted key keeps its member\'s place, in parsed values and in arguments', () => {
  const value = JSON.parse('{"a":1,"bob@example.com":{"carol@example.com":"x"},"z":2}');
  assert.deepEqual(Object.entries(mapJson(value, redact) as object), [['a', 1], ['[EMAIL]', { '[EMAIL]': 'x' }], ['z', 2]]);
  assert.equal(mapArguments('{"a": 1, "bob@example.com": "ok"}', redact), '{"a": 1, "[EMAIL]": "ok"}');
  // The same object given two keys that redact alike cannot keep both: a 400, not a lost member.
  assert.throws(() => mapJson({ 'bob@example.com': 1, 'carol@example.com': 2 }, redact), /already has/);
  assert.throws(() => mapArguments('{"bob@example.com": 1, "carol@example.com": 2}', redact), /already has/);
});

test('arguments are mapped in their text: numbers as written, past 2^53 too, and untouched bytes kept', () => {
  const seen: string[] = [];
  const args = '{ "id" : 1234567890123456789 , "card": 4111111111111111110, "to": "a\\u0040example.com", "ok": [true, null, -1.50e+2] }';
  mapArguments(args, (t) => { seen.push(t); return t; });
  // A number JavaScript would write otherwise is read both ways: a translator that parses the arguments sends the second.
  assert.deepEqual(seen, [
    'id', '1234567890123456789', '1234567890123456800', 'card', '4111111111111111110', '4111111111111111000',
    'to', 'a@example.com', 'ok', '-1.50e+2', '-150',
  ]);
  // Only what changed is rewritten: the id keeps every digit, the spacing stays.
  const card = (t: string) => (t === '4111111111111111110' ? '[CARD_1]' : t);
  assert.equal(mapArguments(args, card), args.replace('4111111111111111110', '"[CARD_1]"'));
  assert.equal(mapArguments(args, (t) => t), args);
  // Caught as JavaScript writes it: the Anthropic and Gemini translators send 4111111111111111.
  assert.equal(mapArguments('{"c":4.111111111111111e15}', (t) => (t === '4111111111111111' ? '[CARD_1]' : t)), '{"c":"[CARD_1]"}');
});
