// A chat, Responses or embeddings body is checked by Ajv's compilation of its
// zod schema, and zod parses only a body that check refuses
// (src/pipeline/request-schema.ts).
// The two must agree on every body: a body the compiled check passed and zod
// would refuse would reach the upstream unchecked. Bodies are drawn from
// values on both sides of each field's bounds and types (mostly accepted,
// so that one refused value is often the only one), with members the schema
// does not name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { chatBody, chatBodyReader, parseChatRequest } from '../src/pipeline/chat-request.js';
import { parseResponsesRequest, responsesBody, responsesBodyReader } from '../src/responses/request-parse.js';
import { embeddingsBody, embeddingsBodyReader, parseEmbeddingsRequest } from '../src/pipeline/embeddings-request.js';
import { GatewayError } from '../src/errors.js';
import type { BodyReader } from '../src/pipeline/request-schema.js';
import type { z } from 'zod';

/** Per field: values zod accepts, then values on the wrong side of a bound or of the wrong type. */
type Values = [unknown[], unknown[]];
const FIELDS: Record<string, Values> = {
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
const PARTS: Values = [
  [{ type: 'text', text: 'a' }, { type: 'image_url', image_url: { url: 'data:,' } }, { type: 'text' }],
  [{ type: 1 }, { text: 'no type' }, { type: 'text', text: 5 }, null, 'text'],
];
const MESSAGE: Record<string, Values> = {
  role: [['system', 'developer', 'user', 'assistant', 'tool', 'function'], ['wizard', 7]],
  content: [['hi', '', null], [7, {}]],
  name: [['n'], []],
  tool_call_id: [['call_1'], []],
};

/** A member's value: mostly one accepted (or none, where `absent`), now and then one refused. */
const value = ([good, bad]: Values, absent: boolean) =>
  fc.oneof({ weight: 6, arbitrary: fc.constantFrom<unknown>(...good, ...(absent ? [undefined] : [])) }, { weight: bad.length ? 1 : 0, arbitrary: fc.constantFrom<unknown>(...(bad.length ? bad : [undefined])) });
const content = fc.oneof(value(MESSAGE.content!, true), fc.array(value(PARTS, false), { maxLength: 3 }));
const message = fc.oneof(
  { weight: 12, arbitrary: fc.record({ role: value(MESSAGE.role!, false), content, name: value(MESSAGE.name!, true), tool_call_id: value(MESSAGE.tool_call_id!, true) }) },
  { weight: 1, arbitrary: fc.constantFrom<unknown>(null, 'hi', { content: 'no role' }) },
);
const messages = fc.oneof({ weight: 12, arbitrary: fc.array(message, { minLength: 1, maxLength: 4 }) }, { weight: 1, arbitrary: fc.constantFrom<unknown>([], 'hi', null, undefined) });
/** A body of `fields`, each present but `required` optional. */
const bodyOf = (fields: Record<string, Values>, required: string[], more: Record<string, fc.Arbitrary<unknown>> = {}) => fc.record({
  ...more,
  ...Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, value(v, !required.includes(k))])),
});
const body = bodyOf(FIELDS, ['model'], { messages });

const RESPONSES: Record<string, Values> = {
  model: [['m'], ['', null]],
  input: [['hi', [{ role: 'user', content: 'hi' }], [{ type: 'function_call_output', call_id: 'c', output: 'x' }], []], [7, null, ['hi'], [null]]],
  instructions: [['be brief', null], [3]],
  stream: [[true, null], ['yes']],
  store: [[false, null], [0]],
  parallel_tool_calls: [[true, null], ['no']],
  previous_response_id: [['resp_1', null], ['', 5]],
  max_output_tokens: [[16, null], [0, 1.5, 2 ** 53]],
  temperature: [[1, null], [2.5]],
  top_p: [[0.5, null], [-0.5]],
  tools: [[[{ type: 'function', name: 'f' }], [], null], [[{ name: 'no type' }], [{ type: 1 }], {}]],
  tool_choice: [['auto', 'none', 'required', { type: 'function', name: 'f' }, null], ['always', { name: 'f' }, 3]],
  text: [[{ format: { type: 'json_object' } }, { format: null }, {}, null], [{ format: { type: 2 } }, { format: 'json' }, 'json']],
  reasoning: [[{ effort: 'low' }, { effort: null }, {}, null], [{ effort: 1 }]],
  metadata: [[{ a: 'b' }, {}, null], [{ a: 1 }, ['a'], 'a']],
  user: [['u', null], [1]],
  future_field: [[1, 'x', null, { nested: [1] }], []],
};
const responses = bodyOf(RESPONSES, ['model', 'input']);

const EMBEDDINGS: Record<string, Values> = {
  model: [['m'], ['', 3, null]],
  // The schema takes any input; readInput (not the schema) refuses what is not text.
  input: [['hi', ['a', 'b'], [1, 2], 7], []],
  encoding_format: [['float', 'base64'], ['FLOAT', 1, null]],
  dimensions: [[1, 256], [0, -1, 1.5, '8', null]],
  user: [['u'], [1, null]],
  future_field: [[1, 'x', null], []],
};
const embeddings = bodyOf(EMBEDDINGS, ['model', 'input']);

/** JSON-shaped, as a request body arrives: undefined members are absent. */
const asSent = (b: unknown) => JSON.parse(JSON.stringify(b)) as Record<string, unknown>;

const AGREEMENT: Array<[string, fc.Arbitrary<unknown>, BodyReader<unknown>, z.ZodType, number]> = [
  ['chat', body, chatBodyReader, chatBody, 3000],
  ['Responses', responses, responsesBodyReader, responsesBody, 3000],
  ['embeddings', embeddings, embeddingsBodyReader, embeddingsBody, 2000],
];
for (const [name, bodies, reader, schema, numRuns] of AGREEMENT) {
  test(`the compiled check and zod agree on every ${name} body`, () => {
    fc.assert(fc.property(bodies, (b) => {
      const json = asSent(b);
      assert.equal(reader.check(json), schema.safeParse(json).success, JSON.stringify(json));
    }), { numRuns });
  });
}

test('an embeddings body the check passes is read; one it refuses is a 400 naming the field', () => {
  const sent = { model: 'm', input: ['a'], dimensions: 8, extra: 1 };
  assert.deepEqual(parseEmbeddingsRequest(sent), { model: 'm', input: ['a'], single: false, encoding_format: 'float', dimensions: 8, raw: sent });
  assert.throws(() => parseEmbeddingsRequest({ model: 'm', input: 'a', dimensions: 0 }),
    (e: unknown) => e instanceof GatewayError && e.code === 'invalid_request' && e.param === 'dimensions');
  assert.throws(() => parseEmbeddingsRequest({ model: 'm', input: 'a', encoding_format: 'FLOAT' }),
    (e: unknown) => e instanceof GatewayError && e.code === 'invalid_request' && e.param === 'encoding_format');
});

test('a chat body the check passes is read as sent; one it refuses is a 400 naming the field', () => {
  const sent = { model: 'm', messages: [{ role: 'user', content: 'hi', name: 'n' }], temperature: 1, tools: [{ type: 'function' }] };
  const req = parseChatRequest(sent);
  assert.equal(req.raw, sent);
  // The caller's own messages, not a copy of them.
  assert.equal(req.messages, sent.messages);
  assert.equal(req.temperature, 1);
  assert.throws(() => parseChatRequest({ model: 'm', messages: [{ role: 'user' }], n: 129 }),
    (e: unknown) => e instanceof GatewayError && e.code === 'invalid_request' && e.param === 'n');
});

test('a Responses body the check passes is read as sent; one it refuses is a 400 naming the field', () => {
  const item = { type: 'message', role: 'user', content: 'hi' };
  const sent = { model: 'm', input: [item], store: false, tools: [{ type: 'function', name: 'f' }] };
  const req = parseResponsesRequest(sent);
  assert.equal(req.raw, sent);
  // The caller's own item, not a copy of it.
  assert.equal(req.input[0], item);
  assert.equal(req.store, false);
  assert.throws(() => parseResponsesRequest({ model: 'm', input: 'hi', max_output_tokens: 0 }),
    (e: unknown) => e instanceof GatewayError && e.code === 'invalid_request' && e.param === 'max_output_tokens');
});

test('where the process refuses code generation from strings, zod alone reads bodies', () => {
  // Ajv's compiled check is generated source; a process hardened with this flag refused to load it.
  const module = new URL('../src/pipeline/chat-request.js', import.meta.url).href;
  const script = `
    const { parseChatRequest } = await import(${JSON.stringify(module)});
    const ok = parseChatRequest({ model: 'm', messages: [{ role: 'user', content: 'hi' }], temperature: 1 });
    let refused;
    try { parseChatRequest({ model: 'm', messages: [{ role: 'wizard', content: 'hi' }] }); } catch (e) { refused = { code: e.code, param: e.param }; }
    console.log(JSON.stringify({ model: ok.model, temperature: ok.temperature, refused }));`;
  const out = execFileSync(process.execPath, ['--disallow-code-generation-from-strings', '--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.deepEqual(JSON.parse(out), { model: 'm', temperature: 1, refused: { code: 'invalid_request', param: 'messages.0.role' } });
});
