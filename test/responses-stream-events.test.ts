// Chat chunks -> typed Responses events: order, indexes, sequence numbers,
// and a snapshot the openai SDK's own accumulator agrees with.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { accumulateResponse } from 'openai/lib/responses/ResponseAccumulator';
import { ItemIds, responseShell } from '../src/responses/chat-to-response.js';
import { parseResponsesRequest } from '../src/responses/request-parse.js';
import { ResponsesEventWriter } from '../src/responses/stream-events.js';
import type { ChatChunk, Delta } from '../src/domain.js';

const HEX = 'cd'.repeat(16);
const chunk = (delta: Delta, finish: string | null = null): ChatChunk => ({ choices: [{ index: 0, delta, finish_reason: finish }] });
const parse = (sse: string) => sse.split('\n\n').filter(Boolean).map((f) => {
  const [ev, data] = f.split('\n');
  const obj = JSON.parse(data!.slice(6));
  assert.equal(ev, `event: ${obj.type}`);
  return obj;
});

test('reasoning, text, then two tool calls: every item opened and closed in order', () => {
  const w = new ResponsesEventWriter(responseShell(`resp_${HEX}`, 1, 'm', parseResponsesRequest({ model: 'm', input: 'x' }), true), new ItemIds(HEX));
  let sse = w.start();
  for (const c of [
    chunk({ role: 'assistant', reasoning_content: 'hm' }), chunk({ content: 'Hel' }), chunk({ content: 'lo' }),
    chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'f', arguments: '{"a"' } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: ':1}' } }] }),
    chunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'g', arguments: '{}' } }] }),
    chunk({}, 'tool_calls'),
  ]) sse += w.chunk(c);
  sse += w.end({ prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 }, { gateway: { provider: 'up' } });
  const events = parse(sse);
  assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i));
  assert.deepEqual(events.map((e) => e.type), [
    'response.created', 'response.in_progress',
    'response.output_item.added', 'response.reasoning_summary_part.added', 'response.reasoning_summary_text.delta',
    'response.reasoning_summary_text.done', 'response.reasoning_summary_part.done', 'response.output_item.done',
    'response.output_item.added', 'response.content_part.added', 'response.output_text.delta', 'response.output_text.delta',
    'response.output_text.done', 'response.content_part.done', 'response.output_item.done',
    'response.output_item.added', 'response.function_call_arguments.delta', 'response.function_call_arguments.delta',
    'response.output_item.added', 'response.function_call_arguments.delta',
    'response.function_call_arguments.done', 'response.output_item.done', 'response.function_call_arguments.done', 'response.output_item.done',
    'response.completed',
  ]);
  const done = events.at(-1);
  assert.equal(done.response.status, 'completed');
  assert.equal(done.response.gateway.provider, 'up');
  assert.deepEqual(done.response.output.map((o: any) => o.type), ['reasoning', 'message', 'function_call', 'function_call']);
  assert.equal(done.response.output[1].content[0].text, 'Hello');
  assert.equal(done.response.output[2].arguments, '{"a":1}');
  assert.equal(done.response.output[3].call_id, 'call_b');
  // The SDK's accumulator, fed the same events, builds the same response.
  let snap: any;
  for (const e of events.slice(0, -1)) snap = accumulateResponse(e, snap);
  assert.equal(snap.output_text, 'Hello');
  assert.equal(snap.output[2].arguments, '{"a":1}');
});

test('a cut output is incomplete; a failure ends with response.failed then error', () => {
  const w = new ResponsesEventWriter(responseShell('resp_x', 1, 'm', parseResponsesRequest({ model: 'm', input: 'x' }), true), new ItemIds(HEX));
  const ok = parse(w.start() + w.chunk(chunk({ content: 'a' })) + w.chunk(chunk({}, 'length')) + w.end({ prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }));
  assert.equal(ok.at(-1).type, 'response.incomplete');
  assert.deepEqual(ok.at(-1).response.incomplete_details, { reason: 'max_output_tokens' });
  const w2 = new ResponsesEventWriter(responseShell('resp_y', 1, 'm', parseResponsesRequest({ model: 'm', input: 'x' }), true), new ItemIds(HEX));
  const bad = parse(w2.start() + w2.chunk(chunk({ content: 'a' })) + w2.fail('upstream_error', 'gone', 'req_1'));
  assert.deepEqual(bad.slice(-2).map((e) => e.type), ['response.failed', 'error']);
  assert.equal(bad.at(-2).response.error.code, 'upstream_error');
  assert.equal(bad.at(-1).code, 'upstream_error');
  assert.equal(bad.at(-1).request_id, 'req_1');
});

test('signed thinking without reasoning text opens a reasoning item with no summary events, sealed when it closes; the SDK accumulator agrees', () => {
  const w = new ResponsesEventWriter(responseShell(`resp_${HEX}`, 1, 'm', parseResponsesRequest({ model: 'm', input: 'x' }), true), new ItemIds(HEX));
  let sse = w.start();
  const block = { type: 'redacted_thinking', data: 'opaque' };
  for (const c of [
    chunk({ role: 'assistant', thinking_blocks: [block] }), chunk({ content: 'Hi' }),
    chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'f', arguments: '{}' }, extra_content: { google: { thought_signature: 's' } } }] }),
    chunk({}, 'tool_calls'),
  ]) sse += w.chunk(c);
  sse += w.end({ prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 });
  const events = parse(sse);
  assert.deepEqual(events.slice(2, 4).map((e) => e.type), ['response.output_item.added', 'response.output_item.done']);
  const reasoning = events[3].item;
  assert.deepEqual(reasoning.summary, []);
  assert.equal(typeof reasoning.encrypted_content, 'string');
  const done = events.at(-1)!.response;
  assert.deepEqual(done.output[2].extra_content, { google: { thought_signature: 's' } });
  let acc: any;
  for (const e of events.slice(0, -1)) acc = accumulateResponse(e, acc);
  assert.deepEqual(acc.output, done.output);
});

test('reasoning streamed as `reasoning` becomes the reasoning summary\'s deltas, as reasoning_content does', () => {
  const w = new ResponsesEventWriter(responseShell(`resp_${HEX}`, 1, 'm', parseResponsesRequest({ model: 'm', input: 'x' }), true), new ItemIds(HEX));
  let sse = w.start();
  for (const c of [chunk({ role: 'assistant', content: '', reasoning: 'Let me ' }), chunk({ reasoning: 'think.' }), chunk({ content: 'Paris.' }), chunk({}, 'stop')]) sse += w.chunk(c);
  sse += w.end({ prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 }, {});
  const events = parse(sse);
  assert.deepEqual(events.filter((e) => e.type === 'response.reasoning_summary_text.delta').map((e) => e.delta), ['Let me ', 'think.']);
  const done = events.at(-1);
  assert.deepEqual(done.response.output[0].summary, [{ type: 'summary_text', text: 'Let me think.' }]);
  assert.equal(done.response.output[1].content[0].text, 'Paris.');
});

test('a tool call with no index is placed by its position in the chunk, as moderation and the chat accumulator place it', () => {
  const w = new ResponsesEventWriter(responseShell(`resp_${HEX}`, 1, 'm', parseResponsesRequest({ model: 'm', input: 'x' }), true), new ItemIds(HEX));
  let sse = w.start();
  for (const c of [
    chunk({ tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'f', arguments: '{"q":"one ' } }] } as Delta),
    chunk({ tool_calls: [{ index: 0, function: { arguments: 'two"}' } }, { id: 'call_b', type: 'function', function: { name: 'g', arguments: '{}' } }] } as Delta),
    chunk({}, 'tool_calls'),
  ]) sse += w.chunk(c);
  sse += w.end({ prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 }, {});
  const done = parse(sse).at(-1);
  assert.deepEqual(done.response.output.map((o: any) => [o.call_id, o.arguments]), [['call_a', '{"q":"one two"}'], ['call_b', '{}']]);
});

test('a delta that goes on with a call under way and then says text: the call\'s arguments first, on its item still open', () => {
  const w = new ResponsesEventWriter(responseShell(`resp_${HEX}`, 1, 'm', parseResponsesRequest({ model: 'm', input: 'x' }), true), new ItemIds(HEX));
  let sse = w.start();
  for (const c of [
    chunk({ role: 'assistant', content: 'Let me check.' }),
    chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'f', arguments: '{"a"' } }] }),
    // Chunked moderation releases a call's held arguments with the text that follows the call.
    chunk({ content: 'Done.', tool_calls: [{ index: 0, function: { arguments: ':1}' } }] }),
    chunk({}, 'stop'),
  ]) sse += w.chunk(c);
  sse += w.end({ prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 }, {});
  const events = parse(sse);
  const closed = new Set<number>();
  for (const e of events) {
    if (e.type === 'response.output_item.done') closed.add(e.output_index);
    else if ('output_index' in e) assert.ok(!closed.has(e.output_index), `${e.type} on output ${e.output_index}, already done`);
  }
  const done = events.at(-1).response;
  assert.deepEqual(done.output.map((o: { type: string }) => o.type), ['message', 'function_call', 'message']);
  assert.equal(done.output[1].arguments, '{"a":1}');
  // The openai SDK's own accumulator builds the same.
  let snap: ReturnType<typeof accumulateResponse> | undefined;
  for (const e of events.slice(0, -1)) snap = accumulateResponse(e, snap);
  assert.deepEqual(snap!.output.map((o) => o.type), ['message', 'function_call', 'message']);
  assert.equal((snap!.output[1] as { arguments: string }).arguments, '{"a":1}');
});
