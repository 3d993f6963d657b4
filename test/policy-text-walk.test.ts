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
