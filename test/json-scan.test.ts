// The step over a JSON string that every text scanner takes (member tables,
// stream chunk tails): it must end exactly where JSON's grammar ends the
// string, however its quotes and backslashes fall.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { stringEnd } from '../src/providers/json-scan.js';

/** Strings dense in what ends or escapes a JSON string. */
const tricky = fc.string({ unit: fc.constantFrom('"', '\\', 'a', 'é', '\n', '\u0000', '😀'), maxLength: 80 });
const any = fc.string({ unit: 'binary', maxLength: 80 });

test('stringEnd ends a string where JSON does', () => {
  fc.assert(fc.property(fc.oneof(tricky, any), fc.string({ maxLength: 5 }), fc.constantFrom('', ',"k":"v"}', '"', '\\"'), (s, before, after) => {
    const quoted = JSON.stringify(s);
    const text = before + quoted + after;
    assert.equal(stringEnd(text, before.length), before.length + quoted.length);
    // Unterminated: every quote inside is escaped, so none ends it.
    assert.equal(stringEnd(before + quoted.slice(0, -1), before.length), -1);
  }), { numRuns: 3000 });
});

test('escaped quotes and backslashes just before the end, at every distance from the start', () => {
  for (let n = 0; n < 40; n++) {
    for (const tail of ['\\"', '\\\\', '\\\\\\"x']) {
      const s = 'a'.repeat(n) + JSON.parse(`"${tail}"`) as string;
      const quoted = JSON.stringify(s);
      assert.equal(stringEnd(`${quoted},"x"`, 0), quoted.length, quoted);
    }
  }
});
