// OpenAI's Responses API for the mock OpenAI server: POST {base}/responses,
// JSON and SSE in the real wire format (typed events with sequence numbers).
// It echoes the last user input text. Offered function tools (and tool_choice
// not "none"), it calls the forced or first one with `mock.toolArguments`, as
// a `function_call` output item; an input ending with `function_call_output`
// items is answered as text ("Tool said: ..."). As at OpenAI,
// `previous_response_id` must name a response it made itself, and every
// function_call_output must answer a call of that response or of the input,
// or it answers 400. DELETE {base}/responses/{id} deletes one it made, as
// OpenAI answers it; any other id is 404, as OpenAI's for an unknown or
// already deleted response.
import type { ServerResponse } from 'node:http';
import type { MockUpstream, RecordedRequest } from './mock-server.js';

let counter = 0;
/** The responses this mock made, each with the call_ids of its function calls. */
const made = new Map<string, Set<string>>();

function lastUserText(input: unknown): string {
  if (typeof input === 'string') return input;
  if (!Array.isArray(input)) return '';
  for (let i = input.length - 1; i >= 0; i--) {
    const it = input[i];
    if (it?.role !== 'user') continue;
    if (typeof it.content === 'string') return it.content;
    return (it.content ?? []).filter((p: any) => p?.type === 'input_text').map((p: any) => p.text).join('');
  }
  return '';
}

function badRequest(res: ServerResponse, message: string, param: string, code: string | null): void {
  res.writeHead(400, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { message, type: 'invalid_request_error', param, code } }));
}

/** The outputs the input ends with, when it ends with function_call_output items. */
function trailingToolOutputs(input: unknown): Array<{ call_id: string; output: string }> {
  if (!Array.isArray(input)) return [];
  const out: Array<{ call_id: string; output: string }> = [];
  for (let i = input.length - 1; i >= 0 && input[i]?.type === 'function_call_output'; i--) {
    const o = input[i].output;
    out.unshift({ call_id: input[i].call_id, output: typeof o === 'string' ? o : JSON.stringify(o) });
  }
  return out;
}

/** The mock's answer: one function call, or text. */
function answer(body: any, mock: MockUpstream): { call: { name: string; arguments: string } } | { text: string } {
  const outputs = trailingToolOutputs(body.input);
  if (outputs.length > 0) return { text: outputs.map((o) => `Tool said: ${o.output}`).join(' ') };
  const tools: any[] = Array.isArray(body.tools) ? body.tools.filter((t: any) => t?.type === 'function' && t.name) : [];
  if (tools.length > 0 && body.tool_choice !== 'none') {
    const name = body.tool_choice?.type === 'function' ? body.tool_choice.name : tools[0].name;
    return { call: { name, arguments: JSON.stringify(mock.toolArguments ?? { location: 'Paris' }) } };
  }
  return { text: lastUserText(body.input) };
}

/** Argument text in three fragments (or fewer when short), as OpenAI streams it. */
function fragments(s: string): string[] {
  const size = Math.max(1, Math.ceil(s.length / 3));
  const out: string[] = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}

export function responsesEndpoint(req: RecordedRequest, res: ServerResponse, mock: MockUpstream): void {
  const body = req.body;
  const prev = body.previous_response_id;
  if (prev && !made.has(prev)) return badRequest(res, `Previous response with id '${prev}' not found.`, 'previous_response_id', 'previous_response_not_found');
  const known = new Set(prev ? made.get(prev) : []);
  if (Array.isArray(body.input)) for (const it of body.input) if (it?.type === 'function_call') known.add(it.call_id);
  for (const o of trailingToolOutputs(body.input)) {
    if (!known.has(o.call_id)) return badRequest(res, `No tool call found for function call output with call_id ${o.call_id}.`, 'input', null);
  }
  const id = `resp_mock${++counter}`;
  const said = answer(body, mock);
  const text = 'text' in said ? said.text : '';
  const words = 'text' in said ? text.match(/\S+\s*/g) ?? [] : fragments(said.call.arguments);
  const usage = { input_tokens: 9, input_tokens_details: { cached_tokens: 0 }, output_tokens: words.length, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 9 + words.length };
  const part = { type: 'output_text', annotations: [], logprobs: [], text };
  const message = { id: `msg_mock${counter}`, type: 'message', status: 'completed', role: 'assistant', content: [part] };
  const call = 'call' in said ? { id: `fc_mock${counter}`, type: 'function_call', status: 'completed', arguments: said.call.arguments, call_id: `call_mock${counter}`, name: said.call.name } : undefined;
  made.set(id, new Set(call ? [call.call_id] : []));
  const response = {
    id, object: 'response', created_at: 1_700_000_000, status: 'completed', background: false, error: null, incomplete_details: null,
    instructions: body.instructions ?? null, model: `${body.model}-2025-01-01`, output: [call ?? message], previous_response_id: prev ?? null,
    parallel_tool_calls: body.parallel_tool_calls ?? true, tool_choice: body.tool_choice ?? 'auto', tools: body.tools ?? [],
    store: body.store ?? true, usage, metadata: body.metadata ?? {}, mock_extra_field: 'kept',
  };
  if (!body.stream) {
    res.writeHead(200, { 'content-type': 'application/json', 'x-ratelimit-remaining-requests': '99' });
    res.end(JSON.stringify(response));
    return;
  }
  let seq = 0;
  const frames: string[] = [];
  const send = (type: string, fields: object) => frames.push(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...fields })}\n\n`);
  const pending = { ...response, status: 'in_progress', output: [], usage: null };
  send('response.created', { response: pending });
  send('response.in_progress', { response: pending });
  if (call) {
    const item = { item_id: call.id, output_index: 0 };
    send('response.output_item.added', { output_index: 0, item: { ...call, status: 'in_progress', arguments: '' } });
    for (const w of words) send('response.function_call_arguments.delta', { ...item, delta: w });
    send('response.function_call_arguments.done', { ...item, name: call.name, arguments: call.arguments });
    send('response.output_item.done', { output_index: 0, item: call });
  } else {
    const item = { item_id: message.id, output_index: 0 };
    send('response.output_item.added', { output_index: 0, item: { ...message, status: 'in_progress', content: [] } });
    send('response.content_part.added', { ...item, content_index: 0, part: { ...part, text: '' } });
    for (const w of words) send('response.output_text.delta', { ...item, content_index: 0, delta: w, logprobs: [] });
    send('response.output_text.done', { ...item, content_index: 0, text, logprobs: [] });
    send('response.content_part.done', { ...item, content_index: 0, part });
    send('response.output_item.done', { output_index: 0, item: message });
  }
  send('response.completed', { response });
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.end(frames.join(''));
}

export function deleteResponseEndpoint(req: RecordedRequest, res: ServerResponse): void {
  const id = decodeURIComponent(req.url.slice(req.url.lastIndexOf('/') + 1));
  const found = made.delete(id);
  res.writeHead(found ? 200 : 404, { 'content-type': 'application/json' });
  res.end(JSON.stringify(found
    ? { id, object: 'response', deleted: true }
    : { error: { message: `Response with id '${id}' not found.`, type: 'invalid_request_error', param: null, code: null } }));
}
