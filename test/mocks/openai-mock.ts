// A mock OpenAI-compatible server: POST {base}/chat/completions (JSON and SSE,
// usage on a final empty-choices chunk when stream_options.include_usage is set,
// as OpenAI documents) and POST {base}/embeddings. It echoes the last user message.
import type { ServerResponse } from 'node:http';
import { startMockServer, sleep, splitWords, type MockUpstream, type RecordedRequest } from './mock-server.js';

export const OPENAI_MOCK_KEY = 'sk-openai-mock-key';

function lastUserText(body: any): string {
  const msgs = Array.isArray(body?.messages) ? body.messages : [];
  for (let i = msgs.length - 1; i >= 0; i--) {
    const m = msgs[i];
    if (m?.role !== 'user') continue;
    if (typeof m.content === 'string') return m.content;
    if (Array.isArray(m.content)) return m.content.filter((p: any) => p?.type === 'text').map((p: any) => p.text).join('');
  }
  return '';
}

const words = (s: string) => (s.match(/\S+/g) ?? []).length;

function fail(res: ServerResponse, status: number, message: string, type = 'invalid_request_error'): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { message, type, param: null, code: null } }));
}

/**
 * `mock_big_stream: N` in the body streams N content chunks of 1 KiB as fast as
 * the socket takes them (each write awaits 'drain'), so a test can see whether
 * the gateway stops reading when its own client stops.
 */
async function bigStream(res: ServerResponse, mock: OpenAIMock, n: number): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const piece = 'x'.repeat(1024);
  const line = `data: {"id":"chatcmpl-big","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"${piece}"},"finish_reason":null}]}\n\n`;
  mock.bigSocket = res.socket ?? undefined;
  for (let i = 0; i < n; i++) {
    if (!res.write(line)) await new Promise<void>((ok) => { res.once('drain', ok); res.once('close', ok); });
    if (res.destroyed) return;
  }
  res.write('data: {"id":"chatcmpl-big","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n');
  res.end('data: [DONE]\n\n');
}

async function chat(req: RecordedRequest, res: ServerResponse, mock: OpenAIMock): Promise<void> {
  const body = req.body;
  if (typeof body.mock_big_stream === 'number') return bigStream(res, mock, body.mock_big_stream);
  const text = lastUserText(body);
  const usage = { prompt_tokens: words(JSON.stringify(body.messages)), completion_tokens: words(text), total_tokens: 0 };
  usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
  const base = { id: 'chatcmpl-mock', created: 1_700_000_000, model: body.model };
  if (!body.stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ...base, object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }], usage }));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const send = (obj: unknown) => res.write(`data: ${JSON.stringify(obj)}\n\n`);
  const chunk = (delta: object, finish: string | null = null) => send({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] });
  chunk({ role: 'assistant', content: '' });
  const parts = splitWords(text, mock.chunks);
  for (let i = 0; i < parts.length; i++) {
    if (mock.fault === 'slow-chunks') await sleep(mock.slowMs);
    if (i === Math.floor(parts.length / 2) && i > 0) {
      // Let what was written reach the wire first: destroy() discards unflushed writes.
      if (mock.fault === 'drop-mid-stream') { await sleep(30); res.socket?.destroy(); return; }
      if (mock.fault === 'error-event-mid-stream') { send({ error: { message: 'mock upstream overloaded', type: 'server_error' } }); res.end(); return; }
    }
    chunk({ content: parts[i] });
  }
  chunk({}, 'stop');
  if (body.stream_options?.include_usage) send({ ...base, object: 'chat.completion.chunk', choices: [], usage });
  res.end('data: [DONE]\n\n');
}

function embeddings(req: RecordedRequest, res: ServerResponse, mock: MockUpstream & { short?: boolean }): void {
  const inputs: string[] = Array.isArray(req.body.input) ? req.body.input : [req.body.input];
  const dims = req.body.dimensions ?? 4;
  const data = inputs.map((t, index) => ({ object: 'embedding', index, embedding: Array.from({ length: dims }, (_, i) => (t.length * (i + 1)) / 1000 + 0.1) }));
  if (mock.short) data.pop();
  const tokens = inputs.reduce((n, t) => n + words(t), 0);
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ object: 'list', data, model: req.body.model, usage: { prompt_tokens: tokens, total_tokens: tokens } }));
}

export interface OpenAIMock extends MockUpstream {
  /** Return one embedding fewer than inputs. */
  short?: boolean;
  /** The socket of the last `mock_big_stream` answer: its bytesWritten shows how much the gateway has read. */
  bigSocket?: import('node:net').Socket;
}

/** `apiKey: null` accepts any caller, like a self-hosted server without auth. */
export async function startOpenAIMock(apiKey: string | null = OPENAI_MOCK_KEY): Promise<OpenAIMock> {
  return startMockServer(async (req, res, mock: OpenAIMock) => {
    if (apiKey !== null && req.headers.authorization !== `Bearer ${apiKey}`) return fail(res, 401, 'Incorrect API key provided.', 'invalid_request_error');
    if (mock.fault === 'error-before-first-byte') return fail(res, 500, 'The server had an error while processing your request.', 'server_error');
    if (req.method === 'POST' && req.url.endsWith('/chat/completions')) return chat(req, res, mock);
    if (req.method === 'POST' && req.url.endsWith('/embeddings')) return embeddings(req, res, mock);
    fail(res, 404, `Unknown path ${req.url}`);
  });
}
