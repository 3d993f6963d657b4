import type { ClientSignal } from './client-signal.js';
import type { RequestHeaders } from './request-headers.js';

// The thin server interface. The pipeline is written against these two objects
// only, so uWebSockets.js and the node:http fallback are interchangeable.

export type HeaderList = ReadonlyArray<readonly [string, string]>;

export interface GatewayRequest {
  /** Upper-case method. */
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

export const STATUS_TEXT: Record<number, string> = {
  200: '200 OK', 201: '201 Created', 204: '204 No Content', 400: '400 Bad Request', 401: '401 Unauthorized',
  403: '403 Forbidden', 404: '404 Not Found', 405: '405 Method Not Allowed', 409: '409 Conflict',
  413: '413 Payload Too Large', 415: '415 Unsupported Media Type', 422: '422 Unprocessable Entity',
  429: '429 Too Many Requests', 500: '500 Internal Server Error', 501: '501 Not Implemented', 502: '502 Bad Gateway',
  503: '503 Service Unavailable', 504: '504 Gateway Timeout',
};

export const statusLine = (status: number): string => STATUS_TEXT[status] ?? String(status);
