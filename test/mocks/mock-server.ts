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
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: any;
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
  close(): Promise<void>;
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
      const rec: RecordedRequest = { method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers, body };
      mock.requests.push(rec);
      Promise.resolve(handler(rec, res, mock)).catch((err) => { res.destroy(err); });
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  mock.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return mock;
}

export const sleep = (ms: number) => new Promise<void>((ok) => setTimeout(ok, ms));

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
