import { STATUS_CODES } from 'node:http';
import type { ClientSignal } from './client-signal.js';
import type { RequestHeaders } from './request-headers.js';

// The thin server interface. The pipeline is written against these two objects
// only, so uWebSockets.js and the node:http fallback are interchangeable.

export type HeaderList = ReadonlyArray<readonly [string, string]>;

export interface GatewayRequest {
  /** The method as sent: methods are case-sensitive (RFC 9110 9.1), so `get` is not GET. */
  readonly method: string;
  readonly path: string;
  /** The raw query string, without '?'. */
  readonly query: string;
  /** The headers sluice reads (request-headers.ts), copied at accept time: uWS requests live only for their callback. */
  readonly headers: RequestHeaders;
  /** The whole body. Reading starts at accept; rejects with GatewayError('body_too_large') past the cap. */
  body(): Promise<Buffer>;
}

export interface GatewayResponse {
  /** Aborted when the client goes away, so that the upstream call is cancelled with it. */
  readonly signal: ClientSignal;
  readonly aborted: boolean;
  /** True once status and headers are out: later failures can only end the stream. */
  readonly started: boolean;
  /** Status, headers and body in one corked write. */
  send(status: number, headers: HeaderList, body?: string | Buffer): void;
  /** Status and headers for a chunked response. */
  beginStream(status: number, headers: HeaderList): void;
  /** `undefined` when the chunk went out at once; otherwise a promise that settles once the socket drains or the client leaves. */
  write(chunk: string): Promise<void> | undefined;
  endStream(last?: string): void;
}

export type RequestHandler = (req: GatewayRequest, res: GatewayResponse) => void;

export interface HttpServer {
  readonly kind: 'uws' | 'node';
  /** Resolves with the bound port (useful with port 0). */
  listen(host: string, port: number): Promise<number>;
  /** Stops accepting connections; in-flight requests are left to finish. */
  close(): Promise<void>;
  /** After the drain: closes every connection still open (idle keep-alives), so nothing holds the thread's loop. */
  closeConnections(): void;
}

export interface ServerTimeouts {
  /** node:http: the request head must arrive within this (slowloris). uWS: fixed, see docs/operations.md. */
  headersMs: number;
  /** node:http: the whole request, head and body, must arrive within this. */
  requestMs: number;
  /** node:http: an idle keep-alive connection is closed after this. */
  idleMs: number;
  /** Both: a response write that has not drained for this long aborts the response. */
  stalledWriteMs: number;
}

export const DEFAULT_TIMEOUTS: ServerTimeouts = { headersMs: 10_000, requestMs: 60_000, idleMs: 65_000, stalledWriteMs: 30_000 };

export interface ServerOptions {
  bodyLimitBytes: number;
  /** DEFAULT_TIMEOUTS when unset. */
  timeouts?: ServerTimeouts;
  /**
   * The last line of defence: a front-end callback threw (a bug). It answers
   * that one request, typically a 500, and the server keeps serving.
   */
  onHandlerError(err: unknown, res: GatewayResponse): void;
}

/** Runs `fn` for one request; a throw is handed to `onHandlerError` instead of unwinding into the server's event loop. */
export function guarded(opts: ServerOptions, res: GatewayResponse, fn: () => void): void {
  try {
    fn();
  } catch (err) {
    try { opts.onHandlerError(err, res); } catch { /* nothing more can be said on this response */ }
  }
}

/**
 * The status line after the version, as uWS's writeStatus takes it: code and
 * reason. RFC 9112 4 wants the space after the code even with no reason; a
 * bare "304" (a status missing from a hand-kept table) sent `HTTP/1.1 304`.
 * node's own table names every registered status; one it lacks (Anthropic's
 * 529, passed through) gets a neutral phrase, which no client reads.
 */
const STATUS_LINES = new Map<number, string>();
export function statusLine(status: number): string {
  let line = STATUS_LINES.get(status);
  if (line === undefined) STATUS_LINES.set(status, line = `${status} ${STATUS_CODES[status] ?? 'Unknown'}`);
  return line;
}
