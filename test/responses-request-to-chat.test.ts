// Responses request -> chat request: items, tools, formats, and the fields
// that are refused rather than dropped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseResponsesRequest } from '../src/responses/request-parse.js';
import { toChatRequest } from '../src/responses/request-to-chat.js';
import { itemsToMessages } from '../src/responses/items-to-messages.js';
import { GatewayError } from '../src/errors.js';
import { sealThinking } from '../src/responses/signed-reasoning.js';

const translate = (body: Record<string, unknown>) => {
  const req = parseResponsesRequest({ model: 'm', ...body });
  return toChatRequest(req, itemsToMessages(req.input, (i) => `input.${i}`));
};
const refused = (param: string) => (e: unknown) => e instanceof GatewayError && e.code === 'invalid_request' && e.param === param;

test('items become messages: parts, images, parallel function calls joined, tool outputs, reasoning left out', () => {
  const chat = translate({ input: [
    { role: 'developer', content: [{ type: 'input_text', text: 'dev' }] },
    { role: 'user', content: [{ type: 'input_text', text: 'see ' }, { type: 'input_image', image_url: 'https://x/img.png', detail: 'low' }] },
    { type: 'reasoning', id: 'rs_1', summary: [] },
    { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'calling', annotations: [] }] },
    { type: 'function_call', call_id: 'c1', name: 'a', arguments: '{}' },
    { type: 'function_call', call_id: 'c2', name: 'b', arguments: '{"x":1}' },
    { type: 'function_call_output', call_id: 'c1', output: 'r1' },
    { type: 'function_call_output', call_id: 'c2', output: [{ type: 'input_text', text: 'r2' }] },
  ] });
  assert.deepEqual(chat.messages, [
    { role: 'developer', content: 'dev' },
    { role: 'user', content: [{ type: 'text', text: 'see ' }, { type: 'image_url', image_url: { url: 'https://x/img.png', detail: 'low' } }] },
    { role: 'assistant', content: 'calling', tool_calls: [
      { id: 'c1', type: 'function', function: { name: 'a', arguments: '{}' } },
      { id: 'c2', type: 'function', function: { name: 'b', arguments: '{"x":1}' } },
    ] },
    { role: 'tool', tool_call_id: 'c1', content: 'r1' },
    { role: 'tool', tool_call_id: 'c2', content: 'r2' },
  ]);
  assert.equal(chat.n, 1);
});

test('settings map onto chat fields', () => {
  const chat = translate({
    input: 'hi', temperature: 0.2, top_p: 0.9, max_output_tokens: 50, user: 'u1', parallel_tool_calls: false,
    tools: [{ type: 'function', name: 'f', description: 'd', parameters: { type: 'object' }, strict: true }],
    tool_choice: { type: 'function', name: 'f' }, text: { format: { type: 'json_schema', name: 's', schema: { type: 'object' }, strict: true } },
    reasoning: { effort: 'low', summary: 'auto' }, metadata: { a: 'b' }, store: false, prompt_cache_key: 'k', include: ['reasoning.encrypted_content'],
  });
  assert.deepEqual(chat.raw, {
    model: 'm', messages: [{ role: 'user', content: 'hi' }], temperature: 0.2, top_p: 0.9, max_tokens: 50, user: 'u1',
    tools: [{ type: 'function', function: { name: 'f', description: 'd', parameters: { type: 'object' }, strict: true } }],
    tool_choice: { type: 'function', function: { name: 'f' } }, parallel_tool_calls: false,
    response_format: { type: 'json_schema', json_schema: { name: 's', schema: { type: 'object' }, strict: true } },
    reasoning_effort: 'low',
  });
  assert.equal(chat.max_tokens, 50);
  assert.deepEqual(translate({ input: 'x', text: { format: { type: 'json_object' } } }).raw.response_format, { type: 'json_object' });
  assert.equal(translate({ input: 'x', text: { format: { type: 'text' } } }).raw.response_format, undefined);
});

test('what cannot be honoured is a 400 naming the field', () => {
  assert.throws(() => translate({ input: 'x', tools: [{ type: 'file_search' }] }), refused('tools.0.type'));
  assert.throws(() => translate({ input: 'x', tool_choice: { type: 'web_search_preview' } }), refused('tool_choice'));
  assert.throws(() => translate({ input: 'x', background: true }), refused('background'));
  assert.throws(() => translate({ input: 'x', truncation: 'auto' }), refused('truncation'));
  assert.throws(() => translate({ input: 'x', include: ['file_search_call.results'] }), refused('include'));
  assert.throws(() => translate({ input: 'x', text: { verbosity: 'low' } }), refused('text.verbosity'));
  assert.throws(() => translate({ input: 'x', brand_new_field: 1 }), refused('brand_new_field'));
  assert.throws(() => translate({ input: [{ type: 'web_search_call', id: 'ws' }] }), refused('input.0.type'));
  assert.throws(() => translate({ input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'f' }] }] }), refused('input.0.content.0.type'));
  assert.throws(() => translate({ input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'f' }] }] }), refused('input.0.content.0.file_id'));
  assert.throws(() => parseResponsesRequest({ model: 'm', input: 3 }), refused('input'));
  assert.throws(() => parseResponsesRequest({ model: 'm', input: [{ content: 'no role' }] }), refused('input.0.type'));
});

test('an item, content part or tool member with no chat equivalent is a 400 naming it, not dropped', () => {
  const user = (part: Record<string, unknown>) => ({ input: [{ role: 'user', content: [part] }] });
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ input: [{ role: 'user', content: 'hi', cache_control: { type: 'ephemeral' } }] }, 'input.0.cache_control'],
    [user({ type: 'input_text', text: 'hi', cache_control: { type: 'ephemeral' } }), 'input.0.content.0.cache_control'],
    [user({ type: 'input_image', image_url: 'https://x/i.png', crop: [0, 0, 1, 1] }), 'input.0.content.0.crop'],
    [{ input: [{ role: 'assistant', content: [{ type: 'refusal', refusal: 'no', reason: 'policy' }] }] }, 'input.0.content.0.reason'],
    [{ input: [{ type: 'function_call', call_id: 'c', name: 'f', arguments: '{}', namespace: 'tools' }] }, 'input.0.namespace'],
    [{ input: [{ type: 'function_call_output', call_id: 'c', output: 'r', is_error: true }] }, 'input.0.is_error'],
    [{ input: [{ type: 'function_call_output', call_id: 'c', output: [{ type: 'input_text', text: 'r', tag: 1 }] }] }, 'input.0.output.0.tag'],
    [{ input: [{ type: 'reasoning', summary: [], signature: 'x' }] }, 'input.0.signature'],
    [{ input: 'x', tools: [{ type: 'function', name: 'f', parameters: {}, defer_loading: true }] }, 'tools.0.defer_loading'],
    [{ input: 'x', text: { format: { type: 'json_schema', name: 's', schema: {}, examples: [] } } }, 'text.format.examples'],
  ];
  for (const [body, param] of cases) assert.throws(() => translate(body), refused(param), param);
  // Members an output item has, replayed as input, describe an earlier answer; a null member is absent.
  const chat = translate({ input: [
    { type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'a', annotations: [], logprobs: [] }] },
    { type: 'function_call', id: 'fc_1', status: 'completed', call_id: 'c', name: 'f', arguments: '{}' },
    { type: 'function_call_output', id: 'fco_1', status: 'completed', call_id: 'c', output: 'r' },
    { type: 'reasoning', id: 'rs_1', status: null, summary: [], content: [], encrypted_content: null },
    { role: 'user', content: [{ type: 'input_text', text: 'b', cache_control: null }] },
  ] });
  assert.equal(chat.messages.length, 3);
});

test("a member named as an object's prototype is a field like any other, refused with a 400 naming it", () => {
  // They found Object.prototype's members in the table of default values: "constructor" passed as a
  // default and was dropped, "__proto__" threw a TypeError (a 500).
  for (const [field, body] of [['constructor', { constructor: 'x' }], ['toString', { toString: 1 }], ['__proto__', JSON.parse('{"__proto__":{"a":1}}')]] as const) {
    assert.throws(() => translate({ input: 'hi', ...body }), refused(field), field);
  }
});

test('an interleaved answer replayed (message, call, reasoning, call, message, results) is one assistant turn before its results', () => {
  const a = { type: 'thinking', thinking: 'a', signature: 's1' };
  const b = { type: 'thinking', thinking: 'b', signature: 's2' };
  const messages = itemsToMessages([
    { type: 'message', role: 'user', content: 'Weather?' },
    { type: 'reasoning', summary: [], encrypted_content: sealThinking([a]) },
    { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Let me check.' }] },
    { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' },
    { type: 'reasoning', summary: [], encrypted_content: sealThinking([b]) },
    { type: 'function_call', call_id: 'c2', name: 'g', arguments: '{}' },
    { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: ' One moment.' }] },
    { type: 'function_call_output', call_id: 'c1', output: '1' },
    { type: 'function_call_output', call_id: 'c2', output: '2' },
  ], (i) => `input.${i}`, { thinking: true, extraContent: false });
  assert.deepEqual(messages.map((m) => m.role), ['user', 'assistant', 'tool', 'tool']);
  assert.equal(messages[1]!.content, 'Let me check. One moment.');
  assert.deepEqual(messages[1]!.tool_calls!.map((t) => t.id), ['c1', 'c2']);
  assert.deepEqual(messages[1]!.thinking_blocks, [a, b]);
  // Two assistant messages with no call between stay two turns, as before.
  const plain = itemsToMessages([{ type: 'message', role: 'assistant', content: 'x' }, { type: 'message', role: 'assistant', content: 'y' }], (i) => `input.${i}`);
  assert.equal(plain.length, 2);
});
