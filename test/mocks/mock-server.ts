// Shared plumbing for the mock upstream servers: a real node:http server on port
// 0 that records every request and lets a test switch fault modes at run time.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type FaultMode =
  | 'none'
  /** HTTP 500 with the provider's error body, before any byte of output. */
  | 'error-before-first-byte'
  /** Sends a few stream chunks, then destroys the socket. */
  | 'drop-mid-stream'
  /** Sends the provider's own error event in the middle of a stream. */
  | 'error-event-mid-stream'
  /** Waits `slowMs` between stream chunks. */
  | 'slow-chunks';

export interface RecordedRequest {
  /** performance.now() when the request arrived, for backoff timing. */
  at: number;
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: any;
  /** The body as the gateway sent it, before parsing. */
  text: string;
}

export interface MockUpstream {
  url: string;
  requests: RecordedRequest[];
  fault: FaultMode;
  slowMs: number;
  /** Number of content chunks a stream is split into (default: one per word). */
  chunks: number | undefined;
  /** Responses whose connection closed before they finished: the gateway aborted the call. */
  aborted: number;
  /**
   * When set, every request is answered with this recorded wire transcript
   * instead of the mock's echo (see test/fixtures/README.md); cleared by
   * setting it back to undefined.
   */
  replay: Transcript | undefined;
  /**
   * Arguments of the function call a mock answers with when the request
   * offers tools (default `{"location":"Paris"}`).
   */
  toolArguments: Record<string, unknown> | undefined;
  /**
   * Scripted failures, consumed one per request before anything else answers:
   * a status (answered with an OpenAI-style error body), a status with headers
   * and an optional delay before it (an upstream that fails slowly), 'drop'
   * (the socket is destroyed before any response), 'head-then-drop' (a 200
   * SSE head, then the socket destroyed before any event), or a transcript
   * played once. Once it is empty the mock answers as usual.
   */
  script: ScriptStep[];
  close(): Promise<void>;
}

export type ScriptStep = number | 'drop' | 'head-then-drop' | { transcript: Transcript } | { status: number; headers?: Record<string, string>; delayMs?: number };

async function playStep(res: ServerResponse, step: ScriptStep): Promise<void> {
  if (step === 'drop') { res.socket?.destroy(); return; }
  if (step === 'head-then-drop') {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
    await sleep(20);
    res.socket?.destroy();
    return;
  }
  if (typeof step === 'object' && 'transcript' in step) return playTranscript(res, step.transcript);
  if (typeof step === 'object' && step.delayMs) await sleep(step.delayMs);
  if (res.destroyed) return;
  const { status, headers } = typeof step === 'number' ? { status: step, headers: {} } : step;
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ error: { message: `scripted ${status}`, type: status === 429 ? 'rate_limit_error' : 'server_error', param: null, code: null } }));
}

/** A provider's answer, byte for byte as its API reference documents it: a JSON body or SSE events. */
export interface Transcript {
  status?: number;
  headers?: Record<string, string>;
  /** A JSON answer. */
  json?: unknown;
  /** A JSON answer as literal text, for checks on its exact bytes. */
  text?: string;
  /** An SSE answer: each event's `data` is a JSON value (serialised compactly) or a literal string such as `[DONE]`. */
  sse?: Array<{ event?: string; data: unknown }>;
  /** Milliseconds between SSE events (default 0: all in one write). */
  pace_ms?: number;
  /** The SSE body is never ended: an upstream that stalls after its last event. */
  hold_open?: boolean;
}

/** Plays a transcript; SSE events all in one write unless paced. */
export async function playTranscript(res: ServerResponse, t: Transcript): Promise<void> {
  const status = t.status ?? 200;
  if (t.sse) {
    res.writeHead(status, { 'content-type': 'text/event-stream', ...t.headers });
    const frames = t.sse.map((e) => `${e.event ? `event: ${e.event}\n` : ''}data: ${typeof e.data === 'string' ? e.data : JSON.stringify(e.data)}\n\n`);
    if (!t.pace_ms) { if (t.hold_open) res.write(frames.join('')); else res.end(frames.join('')); return; }
    for (const f of frames) { res.write(f); await sleep(t.pace_ms); }
    if (!t.hold_open) res.end();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json', ...t.headers });
  res.end(t.text ?? (t.json === undefined ? '' : JSON.stringify(t.json)));
}

export type MockHandler = (req: RecordedRequest, res: ServerResponse, mock: MockUpstream) => void | Promise<void>;

export async function startMockServer(handler: MockHandler): Promise<MockUpstream> {
  const server = createServer({ keepAliveTimeout: 30_000 });
  const mock: MockUpstream = {
    url: '',
    requests: [],
    fault: 'none',
    slowMs: 50,
    chunks: undefined,
    aborted: 0,
    replay: undefined,
    toolArguments: undefined,
    script: [],
    close: () => new Promise<void>((ok) => { server.closeAllConnections(); server.close(() => ok()); }),
  };
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    res.on('close', () => { if (!res.writableFinished) mock.aborted++; });
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const text = Buffer.concat(parts).toString('utf8');
      let body: any = text;
      try { body = text ? JSON.parse(text) : undefined; } catch { /* keep raw text */ }
      const rec: RecordedRequest = { at: performance.now(), method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers, body, text };
      mock.requests.push(rec);
      const step = mock.script.shift();
      if (step !== undefined) { void playStep(res, step); return; }
      const answer = mock.replay ? playTranscript(res, mock.replay) : handler(rec, res, mock);
      Promise.resolve(answer).catch((err) => { res.destroy(err); });
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  mock.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return mock;
}

export const sleep = (ms: number) => new Promise<void>((ok) => setTimeout(ok, ms));

/**
 * After a write that returned false: resolves once the response drains or closes,
 * whichever comes first, and leaves no listener for the other behind (one left per
 * wait piled up on a long stream, past node's warning at eleven).
 */
export function drainedOrClosed(res: ServerResponse): Promise<void> {
  return new Promise<void>((ok) => {
    const done = () => { res.off('drain', done); res.off('close', done); ok(); };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** The pieces a mock streams an echo in: one per word (with its trailing whitespace), or at most `chunks` runs of words when set. */
export function splitWords(text: string, chunks: number | undefined): string[] {
  const words = text.match(/\S+\s*/g) ?? [text];
  if (!chunks || chunks >= words.length) return words;
  const size = Math.ceil(words.length / chunks);
  const out: string[] = [];
  for (let i = 0; i < words.length; i += size) out.push(words.slice(i, i + size).join(''));
  return out;
}

/**
 * Streams `pieces` through `write`, with the stream faults striking after two
 * pieces, or earlier when the echo is shorter: drop-mid-stream cuts the socket,
 * error-event-mid-stream sends `writeError` and ends. False when a fault ended the response.
 */
export async function streamPieces(
  res: ServerResponse, mock: MockUpstream, pieces: string[],
  write: (piece: string, index: number) => void, writeError: () => void,
): Promise<boolean> {
  const faultAt = Math.min(2, pieces.length - 1);
  for (let i = 0; i < pieces.length; i++) {
    if (i === faultAt && mock.fault === 'drop-mid-stream') {
      // Let the chunks already written reach the client: destroying in the same tick discards them.
      await sleep(10);
      res.destroy();
      return false;
    }
    if (i === faultAt && mock.fault === 'error-event-mid-stream') {
      writeError();
      res.end();
      return false;
    }
    if (mock.fault === 'slow-chunks') await sleep(mock.slowMs);
    write(pieces[i]!, i);
  }
  return true;
}
