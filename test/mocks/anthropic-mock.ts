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

async function handle(req: RecordedRequest, res: ServerResponse, mock: MockUpstream, apiKey: string): Promise<void> {
  if (req.method !== 'POST' || !req.url.split('?')[0]!.endsWith('/messages')) { fail(res, 404, 'not_found_error', 'Not found'); return; }
  if (!validate(req, res, apiKey)) return;
  if (mock.fault === 'error-before-first-byte') { fail(res, 500, 'api_error', 'Internal server error'); return; }

  const body = req.body;
  const lastUser = [...body.messages].reverse().find((m: any) => m.role === 'user');
  const reply = splitWords(textOf(lastUser?.content), mock.chunks);
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
