// A mock OpenAI-compatible server: POST {base}/chat/completions (JSON and SSE,
// usage on a final empty-choices chunk when stream_options.include_usage is set,
// as OpenAI documents), POST {base}/embeddings, and the Responses API
// (openai-responses-mock.ts). It echoes the last user message;
// offered tools, it calls one (see `answer`); `n` choices come back, alike, and
// interleaved when streamed; `response_format: json_schema` gets a matching object.
import type { ServerResponse } from 'node:http';
import { drainedOrClosed, startMockServer, sleep, splitWords, type MockUpstream, type RecordedRequest } from './mock-server.js';
import { deleteResponseEndpoint, responsesEndpoint } from './openai-responses-mock.js';
import { valueFor } from './schema-value.js';

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
    if (!res.write(line)) await drainedOrClosed(res);
    if (res.destroyed) return;
  }
  res.write('data: {"id":"chatcmpl-big","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n');
  res.end('data: [DONE]\n\n');
}

/** The mock's answer: one call of a tool, or text (the echo, what a tool said, or a value of the asked JSON schema). */
type Answer = { call: { name: string; arguments: string } } | { text: string };

const textOf = (content: unknown): string => typeof content === 'string' ? content
  : Array.isArray(content) ? content.filter((p: any) => p?.type === 'text').map((p: any) => p.text).join('') : '';

/**
 * The tool mode the three provider mocks share: offered tools (and tool_choice
 * not "none") get one call of the forced or first function, unless the
 * conversation ends with tool results, which are answered as text.
 */
function answer(body: any, mock: MockUpstream): Answer {
  const msgs: any[] = Array.isArray(body?.messages) ? body.messages : [];
  const results: string[] = [];
  for (let i = msgs.length - 1; i >= 0 && msgs[i]?.role === 'tool'; i--) results.unshift(textOf(msgs[i].content));
  if (results.length > 0) return { text: results.map((r) => `Tool said: ${r}`).join(' ') };
  const tools: any[] = Array.isArray(body?.tools) ? body.tools.filter((t: any) => t?.type === 'function' && t.function?.name) : [];
  const choice = body?.tool_choice;
  if (tools.length > 0 && choice !== 'none') {
    const name = choice?.function?.name ?? tools[0].function.name;
    return { call: { name, arguments: JSON.stringify(mock.toolArguments ?? { location: 'Paris' }) } };
  }
  if (body?.response_format?.type === 'json_schema') {
    const schema = body.response_format.json_schema?.schema;
    return { text: JSON.stringify(valueFor(schema)) };
  }
  return { text: lastUserText(body) };
}

/** Argument text in three fragments (or fewer when short), as OpenAI streams it. */
function fragments(s: string): string[] {
  const size = Math.max(1, Math.ceil(s.length / 3));
  const out: string[] = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}

async function chat(req: RecordedRequest, res: ServerResponse, mock: OpenAIMock): Promise<void> {
  const body = req.body;
  if (typeof body.mock_big_stream === 'number') return bigStream(res, mock, body.mock_big_stream);
  const said = answer(body, mock);
  const n = Number.isInteger(body.n) && body.n > 1 ? body.n as number : 1;
  const indexes = Array.from({ length: n }, (_, i) => i);
  const callId = (i: number) => `call_mock${mock.requests.length}_${i}`;
  const outText = 'call' in said ? said.call.arguments : said.text;
  const usage = { prompt_tokens: words(JSON.stringify(body.messages)), completion_tokens: words(outText) * n, total_tokens: 0 };
  usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
  const base = { id: 'chatcmpl-mock', created: 1_700_000_000, model: body.model };
  if (!body.stream) {
    const message = (i: number) => 'call' in said
      ? { role: 'assistant', content: null, tool_calls: [{ id: callId(i), type: 'function', function: said.call }] }
      : { role: 'assistant', content: said.text };
    const finish = 'call' in said ? 'tool_calls' : 'stop';
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ...base, object: 'chat.completion', choices: indexes.map((i) => ({ index: i, message: message(i), finish_reason: finish })), usage }));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const send = (obj: unknown) => res.write(`data: ${JSON.stringify(obj)}\n\n`);
  // Choices interleave: each step sends one chunk per choice index.
  const chunk = (i: number, delta: object, finish: string | null = null) =>
    send({ ...base, object: 'chat.completion.chunk', choices: [{ index: i, delta, finish_reason: finish }] });
  const each = (delta: (i: number) => object, finish: string | null = null) => { for (const i of indexes) chunk(i, delta(i), finish); };
  if ('call' in said) {
    const { name } = said.call;
    each((i) => ({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: callId(i), type: 'function', function: { name, arguments: '' } }] }));
    for (const piece of fragments(said.call.arguments)) {
      if (mock.fault === 'slow-chunks') await sleep(mock.slowMs);
      each(() => ({ tool_calls: [{ index: 0, function: { arguments: piece } }] }));
    }
    each(() => ({}), 'tool_calls');
  } else {
    each(() => ({ role: 'assistant', content: '' }));
    const parts = splitWords(said.text, mock.chunks);
    for (let p = 0; p < parts.length; p++) {
      if (mock.fault === 'slow-chunks') await sleep(mock.slowMs);
      if (p === Math.floor(parts.length / 2) && p > 0) {
        // Let what was written reach the wire first: destroy() discards unflushed writes.
        if (mock.fault === 'drop-mid-stream') { await sleep(30); res.socket?.destroy(); return; }
        if (mock.fault === 'error-event-mid-stream') { send({ error: { message: 'mock upstream overloaded', type: 'server_error' } }); res.end(); return; }
      }
      each(() => ({ content: parts[p] }));
    }
    each(() => ({}), 'stop');
  }
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
    if (req.method === 'POST' && req.url.endsWith('/responses')) return responsesEndpoint(req, res, mock);
    if (req.method === 'DELETE' && /\/responses\/[^/]+$/.test(req.url)) return deleteResponseEndpoint(req, res);
    fail(res, 404, `Unknown path ${req.url}`);
  });
}
