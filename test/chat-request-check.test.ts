// The chat body is checked by Ajv's compilation of the zod schema, and zod
// parses only a body that check refuses (src/pipeline/chat-request.ts). The
// two must agree on every body: a body the compiled check passed and zod
// would refuse would reach the upstream unchecked. Bodies are drawn from
// values on both sides of each field's bounds and types (mostly accepted,
// so that one refused value is often the only one), with members the schema
// does not name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { chatBody, isChatBody, parseChatRequest } from '../src/pipeline/chat-request.js';
import { GatewayError } from '../src/errors.js';

/** Per field: values zod accepts, then values on the wrong side of a bound or of the wrong type. */
const FIELDS: Record<string, [unknown[], unknown[]]> = {
  model: [['m'], ['', 7, null]],
  stream: [[true, false], ['yes', null]],
  temperature: [[0, 2, 0.7], [2.5, -0.1, '1', null]],
  top_p: [[0, 1], [1.1, -1]],
  max_tokens: [[1, 2 ** 53 - 1], [0, -3, 1.5, 2 ** 53]],
  max_completion_tokens: [[64], [0, 1e300]],
  stop: [['x', [], ['a', 'b', 'c', 'd']], [['a', 'b', 'c', 'd', 'e'], [1], null]],
  presence_penalty: [[-2, 2], [-2.1, 3]],
  frequency_penalty: [[0], [2.01]],
  seed: [[1, -1, -(2 ** 53 - 1)], [1.5, 1e300, -(2 ** 53)]],
  user: [['u'], [5]],
  n: [[1, 128], [129, 0, 2.5]],
  stream_options: [[{ include_usage: true }, {}, { other: 1 }], [{ include_usage: 'y' }, 'x', null]],
  tools: [[[{ type: 'function', function: { name: 'f' } }]], []],
  future_field: [[1, 'x', null, { nested: [1] }], []],
};
const PARTS: [unknown[], unknown[]] = [
  [{ type: 'text', text: 'a' }, { type: 'image_url', image_url: { url: 'data:,' } }, { type: 'text' }],
  [{ type: 1 }, { text: 'no type' }, { type: 'text', text: 5 }, null, 'text'],
];
const MESSAGE: Record<string, [unknown[], unknown[]]> = {
  role: [['system', 'developer', 'user', 'assistant', 'tool', 'function'], ['wizard', 7]],
  content: [['hi', '', null], [7, {}]],
  name: [['n'], []],
  tool_call_id: [['call_1'], []],
};

/** A member's value: mostly one accepted (or none, where `absent`), now and then one refused. */
const value = ([good, bad]: [unknown[], unknown[]], absent: boolean) =>
  fc.oneof({ weight: 6, arbitrary: fc.constantFrom<unknown>(...good, ...(absent ? [undefined] : [])) }, { weight: bad.length ? 1 : 0, arbitrary: fc.constantFrom<unknown>(...(bad.length ? bad : [undefined])) });
const content = fc.oneof(value(MESSAGE.content!, true), fc.array(value(PARTS, false), { maxLength: 3 }));
const message = fc.oneof(
  { weight: 12, arbitrary: fc.record({ role: value(MESSAGE.role!, false), content, name: value(MESSAGE.name!, true), tool_call_id: value(MESSAGE.tool_call_id!, true) }) },
  { weight: 1, arbitrary: fc.constantFrom<unknown>(null, 'hi', { content: 'no role' }) },
);
const messages = fc.oneof({ weight: 12, arbitrary: fc.array(message, { minLength: 1, maxLength: 4 }) }, { weight: 1, arbitrary: fc.constantFrom<unknown>([], 'hi', null, undefined) });
const body = fc.record({
  messages,
  ...Object.fromEntries(Object.entries(FIELDS).map(([k, v]) => [k, value(v, k !== 'model')])),
});

test('the compiled check and zod agree on every chat body', () => {
  fc.assert(fc.property(body, (b) => {
    // JSON-shaped, as a request body arrives: undefined members are absent.
    const json = JSON.parse(JSON.stringify(b)) as Record<string, unknown>;
    assert.equal(isChatBody(json), chatBody.safeParse(json).success, JSON.stringify(json));
  }), { numRuns: 3000 });
});

test('a body the check passes is read as sent; one it refuses is a 400 naming the field', () => {
  const sent = { model: 'm', messages: [{ role: 'user', content: 'hi', name: 'n' }], temperature: 1, tools: [{ type: 'function' }] };
  const req = parseChatRequest(sent);
  assert.equal(req.raw, sent);
  // The caller's own messages, not a copy of them.
  assert.equal(req.messages, sent.messages);
  assert.equal(req.temperature, 1);
  assert.throws(() => parseChatRequest({ model: 'm', messages: [{ role: 'user' }], n: 129 }),
    (e: unknown) => e instanceof GatewayError && e.code === 'invalid_request' && e.param === 'n');
});
