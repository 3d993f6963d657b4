// A mock Anthropic Messages API: POST {base}/messages, JSON or SSE. It echoes
// the last user message, counts one token per word, and checks what the real
// API checks first: the x-api-key and anthropic-version headers, max_tokens,
// and user/assistant roles.
import type { ServerResponse } from 'node:http';
import { startMockServer, sleep, splitWords, streamPieces, type MockUpstream, type RecordedRequest } from './mock-server.js';

export const ANTHROPIC_MOCK_KEY = 'sk-ant-mock-key';

const words = (s: string) => (s.match(/\S+/g) ?? []).length;

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.filter((b) => b?.type === 'text' && typeof b.text === 'string').map((b) => b.text).join('\n');
}

function fail(res: ServerResponse, status: number, type: string, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ type: 'error', error: { type, message } }));
}

function sse(res: ServerResponse, type: string, data: Record<string, unknown>): void {
  res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
}

/** Rejects what Anthropic would reject before generating; returns false when it answered. */
function validate(req: RecordedRequest, res: ServerResponse, apiKey: string): boolean {
  if (req.headers['x-api-key'] !== apiKey) { fail(res, 401, 'authentication_error', 'invalid x-api-key'); return false; }
  if (!req.headers['anthropic-version']) { fail(res, 400, 'invalid_request_error', 'anthropic-version: header is required'); return false; }
  const body = req.body;
  if (typeof body?.max_tokens !== 'number') { fail(res, 400, 'invalid_request_error', 'max_tokens: Field required'); return false; }
  if (!Array.isArray(body.messages) || body.messages.length === 0) { fail(res, 400, 'invalid_request_error', 'messages: at least one message is required'); return false; }
  if (body.messages.some((m: any) => m?.role !== 'user' && m?.role !== 'assistant')) {
    fail(res, 400, 'invalid_request_error', 'messages: Unexpected role. Allowed roles are "user" or "assistant".');
    return false;
  }
  return true;
}

/** The text of a user turn's tool results, as `Tool said: …`, or undefined when the turn holds none. */
function toolResults(turn: any): string | undefined {
  const results = Array.isArray(turn?.content) ? turn.content.filter((b: any) => b?.type === 'tool_result') : [];
  if (!results.length) return undefined;
  return results.map((b: any) => `Tool said: ${typeof b.content === 'string' ? b.content : textOf(b.content)}`).join(' ');
}

/**
 * The tool mode all three provider mocks share: offered tools (and calling not
 * turned off) get one call of the forced or first tool, unless the
 * conversation ends with a tool result, which is answered as text.
 */
function toolCall(body: any, mock: MockUpstream): { name: string; input: Record<string, unknown> } | undefined {
  if (!Array.isArray(body.tools) || body.tools.length === 0 || body.tool_choice?.type === 'none') return undefined;
  if (toolResults(body.messages.at(-1)) !== undefined) return undefined;
  const name = body.tool_choice?.type === 'tool' ? body.tool_choice.name : body.tools[0].name;
  return { name, input: mock.toolArguments ?? { location: 'Paris' } };
}

async function answerTool(res: ServerResponse, body: any, mock: MockUpstream, call: { name: string; input: Record<string, unknown> }): Promise<void> {
  const id = `msg_mock${mock.requests.length}`;
  const useId = `toolu_mock${mock.requests.length}`;
  const usage = { input_tokens: 10, output_tokens: 7 };
  if (!body.stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({
      id, type: 'message', role: 'assistant', model: body.model,
      content: [{ type: 'tool_use', id: useId, name: call.name, input: call.input }],
      stop_reason: 'tool_use', stop_sequence: null, usage,
    }));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  sse(res, 'message_start', { message: { id, type: 'message', role: 'assistant', model: body.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } } });
  sse(res, 'content_block_start', { index: 0, content_block: { type: 'tool_use', id: useId, name: call.name, input: {} } });
  // The input arrives as JSON text in fragments, as Anthropic streams it.
  const json = JSON.stringify(call.input);
  const third = Math.ceil(json.length / 3);
  for (let i = 0; i < json.length; i += third) {
    if (mock.fault === 'slow-chunks') await sleep(mock.slowMs);
    sse(res, 'content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: json.slice(i, i + third) } });
  }
  sse(res, 'content_block_stop', { index: 0 });
  sse(res, 'message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 7 } });
  sse(res, 'message_stop', {});
  res.end();
}

async function handle(req: RecordedRequest, res: ServerResponse, mock: MockUpstream, apiKey: string): Promise<void> {
  if (req.method !== 'POST' || !req.url.split('?')[0]!.endsWith('/messages')) { fail(res, 404, 'not_found_error', 'Not found'); return; }
  if (!validate(req, res, apiKey)) return;
  if (mock.fault === 'error-before-first-byte') { fail(res, 500, 'api_error', 'Internal server error'); return; }

  const body = req.body;
  const call = toolCall(body, mock);
  if (call) return answerTool(res, body, mock, call);
  const lastUser = [...body.messages].reverse().find((m: any) => m.role === 'user');
  const said = toolResults(body.messages.at(-1));
  const reply = splitWords(said ?? textOf(lastUser?.content), mock.chunks);
  // max_tokens cuts the echo short, so finish_reason "length" can be tested too.
  const limited = reply.length > body.max_tokens;
  const pieces = limited ? reply.slice(0, body.max_tokens) : reply;
  const inputTokens = words(textOf(body.system)) + body.messages.reduce((n: number, m: any) => n + words(textOf(m.content)), 0);
  const outputTokens = pieces.reduce((n, p) => n + words(p), 0);
  const stopReason = limited ? 'max_tokens' : 'end_turn';
  const id = `msg_mock${mock.requests.length}`;

  if (!body.stream) {
    if (mock.fault === 'drop-mid-stream') { res.destroy(); return; }
    if (mock.fault === 'slow-chunks') await sleep(mock.slowMs);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({
      id, type: 'message', role: 'assistant', model: body.model,
      content: [{ type: 'text', text: pieces.join('') }],
      stop_reason: stopReason, stop_sequence: null,
      usage: { input_tokens: inputTokens, output_tokens: outputTokens },
    }));
    return;
  }

  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  sse(res, 'message_start', {
    message: {
      id, type: 'message', role: 'assistant', model: body.model, content: [], stop_reason: null, stop_sequence: null,
      usage: { input_tokens: inputTokens, output_tokens: 1 },
    },
  });
  sse(res, 'content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
  sse(res, 'ping', {});
  const finished = await streamPieces(res, mock, pieces,
    (text) => sse(res, 'content_block_delta', { index: 0, delta: { type: 'text_delta', text } }),
    () => sse(res, 'error', { error: { type: 'overloaded_error', message: 'Overloaded' } }));
  if (!finished) return;
  sse(res, 'content_block_stop', { index: 0 });
  sse(res, 'message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: outputTokens } });
  sse(res, 'message_stop', {});
  res.end();
}

/**
 * Serve with base URL `${mock.url}/v1`; any prefix before `/messages` is accepted.
 * Faults: error-before-first-byte answers 500 api_error; drop-mid-stream and
 * error-event-mid-stream (an `overloaded_error` event) strike after two text
 * deltas (a JSON answer is dropped before it is sent); slow-chunks waits
 * slowMs before each delta or answer.
 */
export function startAnthropicMock(opts: { apiKey?: string } = {}): Promise<MockUpstream> {
  const apiKey = opts.apiKey ?? ANTHROPIC_MOCK_KEY;
  return startMockServer((req, res, mock) => handle(req, res, mock, apiKey));
}
