// Chat completion -> response object: output items, status, usage, echoed settings.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { completeResponse, ItemIds, responseIdOfItem, responseShell } from '../src/responses/chat-to-response.js';
import { parseResponsesRequest } from '../src/responses/request-parse.js';

const HEX = 'ab'.repeat(16);

test('reasoning, message (text and refusal) and function calls, in that order, with usage details', () => {
  const req = parseResponsesRequest({ model: 'auto', input: 'x', instructions: 'i', metadata: { k: 'v' }, tools: [], temperature: 0.3 });
  const shell = responseShell(`resp_${HEX}`, 1_700_000_000, 'up-model', req, true);
  const r = completeResponse(shell, { choices: [{ index: 0, finish_reason: 'tool_calls', message: {
    role: 'assistant', content: 'hi', refusal: 'no', reasoning_content: 'thinking',
    tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }],
  } }] }, { prompt_tokens: 4, completion_tokens: 6, total_tokens: 10, prompt_tokens_details: { cached_tokens: 2 }, completion_tokens_details: { reasoning_tokens: 3 } }, new ItemIds(HEX));
  assert.deepEqual(r.output, [
    { type: 'reasoning', id: `rs_${HEX}_0`, summary: [{ type: 'summary_text', text: 'thinking' }] },
    { type: 'message', id: `msg_${HEX}_1`, status: 'completed', role: 'assistant', content: [
      { type: 'output_text', annotations: [], logprobs: [], text: 'hi' }, { type: 'refusal', refusal: 'no' }] },
    { type: 'function_call', id: `fc_${HEX}_2`, call_id: 'call_1', name: 'f', arguments: '{}', status: 'completed' },
  ]);
  assert.equal(r.status, 'completed');
  assert.deepEqual(r.usage, { input_tokens: 4, input_tokens_details: { cached_tokens: 2 }, output_tokens: 6, output_tokens_details: { reasoning_tokens: 3 }, total_tokens: 10 });
  assert.equal(r.instructions, 'i');
  assert.deepEqual(r.metadata, { k: 'v' });
  assert.equal(r.temperature, 0.3);
  assert.equal(r.top_p, 1);
  assert.deepEqual(r.text, { format: { type: 'text' } });
  assert.equal(r.previous_response_id, null);
  assert.equal(r.output_text, undefined, 'output_text is computed by the SDKs, not sent by the API');
  assert.equal(responseIdOfItem(`fc_${HEX}_2`), `resp_${HEX}`);
  assert.equal(responseIdOfItem('msg_abc'), undefined);
});

test('length and content_filter finishes are incomplete with the real reasons', () => {
  const req = parseResponsesRequest({ model: 'm', input: 'x' });
  const run = (finish: string) => completeResponse(responseShell('resp_1', 0, 'm', req, false), { choices: [{ index: 0, finish_reason: finish, message: { role: 'assistant', content: 'cut' } }] }, { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }, new ItemIds(HEX));
  assert.deepEqual([run('length').status, run('length').incomplete_details], ['incomplete', { reason: 'max_output_tokens' }]);
  assert.deepEqual(run('content_filter').incomplete_details, { reason: 'content_filter' });
  assert.equal(run('stop').incomplete_details, null);
});

test('reasoning spelled `reasoning` (OpenRouter, vLLM, Ollama, Groq) is the reasoning item\'s summary; with both spellings, one is read', () => {
  const req = parseResponsesRequest({ model: 'auto', input: 'x' });
  const out = (message: object) => completeResponse(responseShell(`resp_${HEX}`, 1, 'm', req, true), { choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'hi', ...message } }] }, { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }, new ItemIds(HEX)).output;
  assert.deepEqual(out({ reasoning: 'thinking' })[0], { type: 'reasoning', id: `rs_${HEX}_0`, summary: [{ type: 'summary_text', text: 'thinking' }] });
  assert.deepEqual(out({ reasoning: 'thinking', reasoning_content: 'thinking' })[0], { type: 'reasoning', id: `rs_${HEX}_0`, summary: [{ type: 'summary_text', text: 'thinking' }] });
  assert.equal(out({}).length, 1, 'no reasoning, no reasoning item');
});

test('a content given as chunks (Mistral\'s reasoning models): text chunks are the text, thinking chunks the reasoning; another kind fails the answer', () => {
  const req = parseResponsesRequest({ model: 'auto', input: 'x' });
  const out = (content: unknown) => completeResponse(responseShell(`resp_${HEX}`, 1, 'm', req, true), { choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: content as string } }] }, { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }, new ItemIds(HEX)).output;
  assert.deepEqual(out([{ type: 'thinking', thinking: [{ type: 'text', text: 'Paris is ' }, { type: 'text', text: 'the capital.' }] }, { type: 'text', text: 'Par' }, { type: 'text', text: 'is.' }]), [
    { type: 'reasoning', id: `rs_${HEX}_0`, summary: [{ type: 'summary_text', text: 'Paris is the capital.' }] },
    { type: 'message', id: `msg_${HEX}_1`, status: 'completed', role: 'assistant', content: [{ type: 'output_text', annotations: [], logprobs: [], text: 'Paris.' }] },
  ]);
  assert.throws(() => out([{ type: 'reference', reference_ids: [1] }]), /"reference" content chunk, which has no Responses form/);
});
