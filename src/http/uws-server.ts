// uWebSockets.js front end. Everything uWS hands us is valid only inside its
// callback, so the request is copied at once, onAborted is registered before any
// await, and every later write happens inside res.cork().
import { createRequire } from 'node:module';
import type { HttpResponse, HttpRequest, TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import { BodyCollector, clientLeft, EMPTY_BODY } from './body-collector.js';
import { ClientSignal } from './client-signal.js';
import { REQUEST_HEADERS, requestHeaders, type RequestHeaderName } from './request-headers.js';
import { DEFAULT_TIMEOUTS, guarded, statusLine, type GatewayRequest, type GatewayResponse, type HeaderList, type HttpServer, type RequestHandler, type ServerOptions } from './types.js';

type Uws = typeof import('uWebSockets.js');

/** Loads the native binary, or returns undefined where none exists (musl, an unsupported Node ABI). */
export function loadUws(): Uws | undefined {
  try {
    return createRequire(import.meta.url)('uWebSockets.js') as Uws;
  } catch {
    return undefined;
  }
}

const HAS_BODY = new Set(['POST', 'PUT', 'PATCH']);

/**
 * uWS turns every string it is handed into UTF-8 through V8 (a length pass, an
 * allocation and a copy: about 900 instructions for a short header), and reads
 * a Buffer where it lies. Header names come from a small fixed set: each is
 * encoded once, as it is first written. Values (request ids, counts) mostly
 * never repeat, and go as strings. The bound is for names a future caller
 * might make up; past it, they go as strings too.
 */
const encodedNames = new Map<string, Buffer>();
const MAX_NAMES = 256;

function nameBytes(name: string): Buffer | string {
  const hit = encodedNames.get(name);
  if (hit !== undefined) return hit;
  if (encodedNames.size >= MAX_NAMES) return name;
  const b = Buffer.from(name, 'latin1');
  encodedNames.set(name, b);
  return b;
}

/** The request headers' names, encoded once: every request looks each of them up. */
const REQUEST_HEADER_BYTES = Object.fromEntries(REQUEST_HEADERS.map((n) => [n, Buffer.from(n, 'latin1')])) as Record<RequestHeaderName, Buffer>;

class UwsResponse implements GatewayResponse {
  readonly signal = new ClientSignal();
  private drain: (() => void) | undefined;
  aborted = false;
  started = false;
  closeAfter = false;
  /** Set once the client left or the response ended: uWS forbids touching res after either. */
  private finished = false;

  /** HEAD answers carry the headers of a GET and no body; uWS would send the body, so it is withheld here. */
  isHead = false;
  /** The request body still coming in: uWS sends no last onData after an abort, so the abort fails it. */
  body: BodyCollector | undefined;

  constructor(private readonly res: HttpResponse, private readonly stalledWriteMs: number) {
    res.onAborted(() => {
      this.aborted = true;
      this.finished = true;
      this.body?.fail(clientLeft());
      this.body = undefined;
      this.signal.abort();
      this.drain?.();
    });
  }

  private head(status: number, headers: HeaderList): void {
    this.res.writeStatus(statusLine(status));
    for (const [k, v] of headers) this.res.writeHeader(nameBytes(k), v);
    // uWS closes the connection after such a reply but does not say so; a pooling
    // client (node's keep-alive agent) then reuses the dying socket and its next
    // request fails with "socket hang up". RFC 9112 9.6: announce the close.
    if (this.closeAfter) this.res.writeHeader('connection', 'close');
  }

  send(status: number, headers: HeaderList, body?: string | Buffer): void {
    if (this.finished || this.started) return;
    this.started = true;
    this.finished = true;
    this.res.cork(() => {
      this.head(status, headers);
      // No length for HEAD, and no arguments at all: given a length above zero, uWS leaves the
      // response waiting for that body, so the connection's next request is never answered; given
      // only the close flag, it reads the missing length as 2^63. RFC 9110 lets the length go
      // unsaid, and uWS closes after a request that said `Connection: close` by itself.
      // A 304 has no body either, and its length, if said, would be the page's; a 204 may say
      // none at all (RFC 9110 8.6). A 204 closes only after a request that said so.
      if (this.isHead || status === 304 || (status === 204 && body === undefined)) this.res.endWithoutBody();
      else this.res.end(body ?? '', this.closeAfter);
    });
  }

  /** Status and headers wait for the first chunk, so both leave in one packet: that is the TTFB. */
  private head0: { status: number; headers: HeaderList } | undefined;

  beginStream(status: number, headers: HeaderList): void {
    if (this.finished || this.started) return;
    this.started = true;
    this.head0 = { status, headers };
  }

  private flushHead(): void {
    if (!this.head0) return;
    this.head(this.head0.status, this.head0.headers);
    this.head0 = undefined;
  }

  write(chunk: string): Promise<void> | undefined {
    if (this.finished) return undefined;
    let ok = true;
    this.res.cork(() => { this.flushHead(); ok = this.res.write(chunk); });
    if (ok) return undefined;
    // uWS has buffered the chunk; wait until it has drained before producing more. A caller
    // that stopped reading is cut off past the deadline (uWS's own ~10 s timeout may come first);
    // close() runs onAborted, which aborts the upstream call and settles this promise.
    return new Promise<void>((resolve) => {
      const stalled = setTimeout(() => { if (!this.finished) this.res.close(); }, this.stalledWriteMs);
      this.drain = () => { clearTimeout(stalled); this.drain = undefined; resolve(); };
      this.res.onWritable(() => { this.drain?.(); return true; });
    });
  }

  endStream(last?: string): void {
    if (this.finished) return;
    this.finished = true;
    this.res.cork(() => { this.flushHead(); this.res.end(last ?? '', this.closeAfter); });
  }
}

/**
 * A copy of a chunk uWS hands over, which it neuters after the callback. From
 * node's Buffer pool where it fits: `Buffer.from(ab.slice(0))` made a fresh
 * backing store per request (malloc'd, counted as external memory, swept by
 * V8), 1.39 µs median and 2.78 mean for a 300-byte body against 0.24 and 0.39
 * (tinybench, 2026-11-29).
 */
export function copyChunk(ab: ArrayBuffer): Buffer {
  const copy = Buffer.allocUnsafe(ab.byteLength);
  copy.set(new Uint8Array(ab));
  return copy;
}

function accept(res: HttpResponse, req: HttpRequest, response: UwsResponse, opts: ServerOptions): GatewayRequest {
  // Methods are case-sensitive (RFC 9110 9.1): `get` is not GET, as node's parser holds too.
  const method = req.getCaseSensitiveMethod();
  response.isHead = method === 'HEAD';
  // uWS answers '' for a header the request lacks; an empty one is read as absent too.
  const headers = requestHeaders((name) => req.getHeader(REQUEST_HEADER_BYTES[name]) || undefined, method === 'GET' || response.isHead);
  if (headers.connection !== undefined && /(?:^|,)\s*close\s*(?:,|$)/i.test(headers.connection)) response.closeAfter = true;
  let body = EMPTY_BODY;
  if (HAS_BODY.has(method)) {
    const len = headers['content-length'];
    const collector = new BodyCollector(opts.bodyLimitBytes, len === undefined ? undefined : Number(len));
    if (collector.overflowed) response.closeAfter = true;
    else {
      response.body = collector;
      res.onData((ab, isLast) => {
        guarded(opts, response, () => {
          if (!collector.push(copyChunk(ab), isLast)) response.closeAfter = true;
          if (isLast) response.body = undefined;
        });
      });
    }
    body = () => collector.take();
  }
  return { method, path: req.getUrl(), query: req.getQuery() ?? '', headers, body };
}

export function createUwsServer(uws: Uws, handler: RequestHandler, opts: ServerOptions): HttpServer {
  const app: TemplatedApp = uws.App();
  let listenSocket: us_listen_socket | undefined;
  app.any('/*', (res, req) => {
    // The response first: it registers onAborted, and whatever throws after it can still be answered on it.
    const response = new UwsResponse(res, (opts.timeouts ?? DEFAULT_TIMEOUTS).stalledWriteMs);
    guarded(opts, response, () => handler(accept(res, req, response, opts), response));
  });
  return {
    kind: 'uws',
    listen(host, port) {
      return new Promise((ok, fail) => {
        app.listen(host, port, (sock) => {
          if (!sock) return fail(new Error(`uWebSockets.js could not listen on ${host}:${port}`));
          listenSocket = sock;
          ok(uws.us_socket_local_port(sock));
        });
      });
    },
    async close() {
      if (listenSocket) uws.us_listen_socket_close(listenSocket);
      listenSocket = undefined;
    },
    closeConnections() {
      // A gateway thread whose loop still holds a uWS socket aborts the process when it ends.
      app.close();
    },
  };
}
