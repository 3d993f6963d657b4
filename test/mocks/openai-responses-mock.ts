// OpenAI's Responses API for the mock OpenAI server: POST {base}/responses,
// JSON and SSE in the real wire format (typed events with sequence numbers).
// It echoes the last user input text; `previous_response_id` must name a
// response it made itself, as at OpenAI, or it answers 400.
import type { ServerResponse } from 'node:http';
import type { RecordedRequest } from './mock-server.js';

let counter = 0;
const made = new Set<string>();

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

export function responsesEndpoint(req: RecordedRequest, res: ServerResponse): void {
  const body = req.body;
  if (body.previous_response_id && !made.has(body.previous_response_id)) {
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: `Previous response with id '${body.previous_response_id}' not found.`, type: 'invalid_request_error', param: 'previous_response_id', code: 'previous_response_not_found' } }));
    return;
  }
  const id = `resp_mock${++counter}`;
  made.add(id);
  const text = lastUserText(body.input);
  const words = text.match(/\S+\s*/g) ?? [];
  const usage = { input_tokens: 9, input_tokens_details: { cached_tokens: 0 }, output_tokens: words.length, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 9 + words.length };
  const part = { type: 'output_text', annotations: [], logprobs: [], text };
  const message = { id: `msg_mock${counter}`, type: 'message', status: 'completed', role: 'assistant', content: [part] };
  const response = {
    id, object: 'response', created_at: 1_700_000_000, status: 'completed', background: false, error: null, incomplete_details: null,
    instructions: body.instructions ?? null, model: `${body.model}-2025-01-01`, output: [message], previous_response_id: body.previous_response_id ?? null,
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
  const item = { item_id: message.id, output_index: 0 };
  send('response.output_item.added', { output_index: 0, item: { ...message, status: 'in_progress', content: [] } });
  send('response.content_part.added', { ...item, content_index: 0, part: { ...part, text: '' } });
  for (const w of words) send('response.output_text.delta', { ...item, content_index: 0, delta: w, logprobs: [] });
  send('response.output_text.done', { ...item, content_index: 0, text, logprobs: [] });
  send('response.content_part.done', { ...item, content_index: 0, part });
  send('response.output_item.done', { output_index: 0, item: message });
  send('response.completed', { response });
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.end(frames.join(''));
}
