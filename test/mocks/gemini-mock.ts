// A mock Gemini API: POST {base}/models/{model}:generateContent,
// :streamGenerateContent?alt=sse, :embedContent and :batchEmbedContents.
// Chat echoes the last user turn with one token per word, or, offered tools,
// calls one (see `answer`), and answers a tool result; `candidateCount`
// candidates come back, alike. Embeddings are
// deterministic per text, and exact in float32 so both encodings compare equal.
import type { ServerResponse } from 'node:http';
import { startMockServer, sleep, splitWords, streamPieces, type MockUpstream, type RecordedRequest } from './mock-server.js';

export const GEMINI_MOCK_KEY = 'gemini-mock-key';

/** Vector size when the request sets no outputDimensionality (the real models use 768 or 3072). */
export const GEMINI_MOCK_DIMENSIONS = 8;

export interface GeminiMockUpstream extends MockUpstream {
  /** Vectors left off the end of every embeddings answer, to provoke `embeddings_incomplete`. */
  missingEmbeddings: number;
}

const words = (s: string) => (s.match(/\S+/g) ?? []).length;
const textOf = (content: any): string =>
  Array.isArray(content?.parts) ? content.parts.map((p: any) => (typeof p?.text === 'string' ? p.text : '')).join('') : '';

function fail(res: ServerResponse, code: number, status: string, message: string): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { code, message, status } }));
}

/** k/1024 with |k| ≤ 1000: exactly representable in float32 and short in JSON. */
export function mockVector(text: string, dims: number): number[] {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619) >>> 0;
  return Array.from({ length: dims }, (_, j) => (((h + j * 7919) % 2001) - 1000) / 1024);
}

function embedding(req: any): { values: number[] } {
  return { values: mockVector(textOf(req?.content), req?.outputDimensionality ?? GEMINI_MOCK_DIMENSIONS) };
}

/** The mock's answer to one request: a function call, or text (the echo, or what a tool said). */
type Answer = { call: { name: string; args: Record<string, unknown> } } | { text: string };

/**
 * The tool mode all three provider mocks share: offered tools (and calling not
 * turned off) get one call of the allowed or first function, unless the
 * conversation ends with a tool result, which is answered as text.
 */
function answer(body: any, mock: MockUpstream): Answer {
  const last = body.contents.at(-1);
  const responses = (last?.parts ?? []).filter((p: any) => p?.functionResponse);
  if (last?.role === 'user' && responses.length > 0) {
    return { text: responses.map((p: any) => `Tool said: ${JSON.stringify(p.functionResponse.response)}`).join(' ') };
  }
  const declarations = (body.tools ?? []).flatMap((t: any) => t?.functionDeclarations ?? []);
  const config = body.toolConfig?.functionCallingConfig;
  if (declarations.length > 0 && config?.mode !== 'NONE') {
    const name = config?.allowedFunctionNames?.[0] ?? declarations[0].name;
    return { call: { name, args: mock.toolArguments ?? { location: 'Paris' } } };
  }
  const lastUser = [...body.contents].reverse().find((c: any) => c.role === 'user');
  return { text: textOf(lastUser) };
}

async function chat(req: RecordedRequest, res: ServerResponse, mock: MockUpstream, stream: boolean): Promise<void> {
  const body = req.body;
  if (!Array.isArray(body?.contents) || body.contents.length === 0) { fail(res, 400, 'INVALID_ARGUMENT', '* GenerateContentRequest.contents: contents is not specified'); return; }
  if (body.contents.some((c: any) => c?.role !== 'user' && c?.role !== 'model')) { fail(res, 400, 'INVALID_ARGUMENT', 'Please use a valid role: user, model.'); return; }
  if (stream && !/[?&]alt=sse(&|$)/.test(req.url)) { fail(res, 400, 'INVALID_ARGUMENT', 'This mock streams only with alt=sse.'); return; }

  const said = answer(body, mock);
  const reply = 'text' in said ? splitWords(said.text, mock.chunks) : [];
  const max = body.generationConfig?.maxOutputTokens;
  const limited = typeof max === 'number' && reply.length > max;
  const pieces = limited ? reply.slice(0, max) : reply;
  const n = body.generationConfig?.candidateCount ?? 1;
  const prompt = words(textOf(body.systemInstruction)) + body.contents.reduce((k: number, c: any) => k + words(textOf(c)), 0);
  const finishReason = limited ? 'MAX_TOKENS' : 'STOP';
  const callTokens = 'call' in said ? words(JSON.stringify(said.call)) : 0;
  const usage = (done: number) => ({ promptTokenCount: prompt, candidatesTokenCount: done * n, totalTokenCount: prompt + done * n });
  const candidates = (part: object, finish?: string) =>
    Array.from({ length: n }, (_, index) => ({ content: { parts: [part], role: 'model' }, ...(finish ? { finishReason: finish } : {}), index }));
  const model = req.url.match(/models\/([^:/?]+):/)?.[1];
  const responseId = `mock-${mock.requests.length}`;

  if (!stream) {
    if (mock.fault === 'drop-mid-stream') { res.destroy(); return; }
    if (mock.fault === 'slow-chunks') await sleep(mock.slowMs);
    res.writeHead(200, { 'content-type': 'application/json' });
    const part = 'call' in said ? { functionCall: said.call } : { text: pieces.join('') };
    const done = 'call' in said ? callTokens : words(pieces.join(''));
    res.end(JSON.stringify({ candidates: candidates(part, 'call' in said ? 'STOP' : finishReason), usageMetadata: usage(done), modelVersion: model, responseId }));
    return;
  }

  // Gemini's SSE framing uses CRLF; every chunk repeats the cumulative usage, the last one adds finishReason.
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const send = (payload: unknown) => res.write(`data: ${JSON.stringify(payload)}\r\n\r\n`);
  if ('call' in said) {
    // Gemini sends a function call whole, in one chunk.
    if (mock.fault === 'slow-chunks') await sleep(mock.slowMs);
    send({ candidates: candidates({ functionCall: said.call }, 'STOP'), usageMetadata: usage(callTokens), modelVersion: model, responseId });
    res.end();
    return;
  }
  let done = 0;
  const finished = await streamPieces(res, mock, pieces, (piece, i) => {
    done += words(piece);
    const last = i === pieces.length - 1;
    send({ candidates: candidates({ text: piece }, last ? finishReason : undefined), usageMetadata: usage(done), modelVersion: model, responseId });
  }, () => send({ error: { code: 503, message: 'The model is overloaded. Please try again later.', status: 'UNAVAILABLE' } }));
  if (finished) res.end();
}

async function embed(req: RecordedRequest, res: ServerResponse, mock: GeminiMockUpstream, batch: boolean): Promise<void> {
  if (mock.fault === 'drop-mid-stream') { res.destroy(); return; }
  if (mock.fault === 'slow-chunks') await sleep(mock.slowMs);
  const body = req.body;
  let answer: unknown;
  if (batch) {
    if (!Array.isArray(body?.requests)) { fail(res, 400, 'INVALID_ARGUMENT', '* BatchEmbedContentsRequest.requests: requests is not specified'); return; }
    if (body.requests.length > 100) { fail(res, 400, 'INVALID_ARGUMENT', '* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch'); return; }
    const vectors = body.requests.map(embedding);
    answer = { embeddings: vectors.slice(0, Math.max(0, vectors.length - mock.missingEmbeddings)) };
  } else {
    answer = mock.missingEmbeddings > 0 ? {} : { embedding: embedding(body) };
  }
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(answer));
}

async function handle(req: RecordedRequest, res: ServerResponse, mock: GeminiMockUpstream, apiKey: string): Promise<void> {
  const method = req.method === 'POST' ? req.url.match(/\/models\/[^:/?]+:(\w+)/)?.[1] : undefined;
  if (!method) { fail(res, 404, 'NOT_FOUND', 'Not found'); return; }
  // The real API answers a bad key with 400 INVALID_ARGUMENT and a missing one with 403; the mock uses 401 so auth failures are unmistakable.
  if (req.headers['x-goog-api-key'] !== apiKey) { fail(res, 401, 'UNAUTHENTICATED', 'API key not valid. Please pass a valid API key.'); return; }
  if (mock.fault === 'error-before-first-byte') { fail(res, 500, 'INTERNAL', 'An internal error has occurred.'); return; }
  switch (method) {
    case 'generateContent': return chat(req, res, mock, false);
    case 'streamGenerateContent': return chat(req, res, mock, true);
    case 'embedContent': return embed(req, res, mock, false);
    case 'batchEmbedContents': return embed(req, res, mock, true);
    default: fail(res, 404, 'NOT_FOUND', `Method ${method} not found.`);
  }
}

/**
 * Serve with base URL `${mock.url}/v1beta`; any prefix before `/models/` is accepted.
 * Faults: error-before-first-byte answers 500 INTERNAL; drop-mid-stream and
 * error-event-mid-stream strike after two stream chunks (a JSON answer is
 * dropped before it is sent); slow-chunks waits slowMs before each chunk or answer.
 */
export async function startGeminiMock(opts: { apiKey?: string } = {}): Promise<GeminiMockUpstream> {
  const apiKey = opts.apiKey ?? GEMINI_MOCK_KEY;
  // The server hands each request the very object returned here, so the cast is sound.
  const base = await startMockServer((req, res, mock) => handle(req, res, mock as GeminiMockUpstream, apiKey));
  return Object.assign(base, { missingEmbeddings: 0 });
}
