// node:http fallback, for platforms where the uWebSockets.js binary cannot load.
// Same interface and the same body cap as the uWS server.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { errorBody, GatewayError } from '../errors.js';
import { newRequestId } from '../pipeline/request-context.js';
import { BodyCollector, clientLeft, EMPTY_BODY } from './body-collector.js';
import { ClientSignal } from './client-signal.js';
import { requestHeaders } from './request-headers.js';
import { DEFAULT_TIMEOUTS, guarded, type GatewayRequest, type GatewayResponse, type HeaderList, type HttpServer, type RequestHandler, type ServerOptions, statusLine } from './types.js';

const HAS_BODY = new Set(['POST', 'PUT', 'PATCH']);
/** List headers, whose lines join into one list: every line's items count, so the joined value is read. */
const LIST_HEADERS = new Set(['accept-encoding', 'connection']);

class NodeResponse implements GatewayResponse {
  readonly signal = new ClientSignal();
  aborted = false;
  started = false;
  closeAfter = false;

  constructor(private readonly res: ServerResponse, private readonly stalledWriteMs: number) {
    res.on('close', () => {
      if (res.writableFinished) return;
      this.aborted = true;
      this.signal.abort();
    });
  }

  private head(status: number, headers: HeaderList): void {
    const flat: string[] = [];
    for (const [k, v] of headers) flat.push(k, v);
    if (this.closeAfter) flat.push('connection', 'close');
    this.res.writeHead(status, flat);
  }

  send(status: number, headers: HeaderList, body?: string | Buffer): void {
    if (this.aborted || this.started) return;
    this.started = true;
    this.head(status, headers);
    this.res.end(body);
  }

  beginStream(status: number, headers: HeaderList): void {
    if (this.aborted || this.started) return;
    this.started = true;
    // No flushHeaders(): node sends the head with the first chunk, in one packet.
    this.head(status, headers);
  }

  write(chunk: string): Promise<void> | undefined {
    if (this.aborted || this.res.writableEnded) return undefined;
    if (this.res.write(chunk)) return undefined;
    return new Promise<void>((ok) => {
      // A caller that stopped reading would otherwise hold the response, its upstream call and
      // their buffers forever: past the deadline the connection goes, and 'close' aborts the rest.
      const stalled = setTimeout(() => this.res.destroy(), this.stalledWriteMs);
      const done = () => { clearTimeout(stalled); this.res.off('drain', done); this.res.off('close', done); ok(); };
      this.res.on('drain', done);
      this.res.on('close', done);
    });
  }

  endStream(last?: string): void {
    if (this.aborted || this.res.writableEnded) return;
    this.res.end(last);
  }
}

function accept(req: IncomingMessage, response: NodeResponse, opts: ServerOptions): GatewayRequest {
  // node's parser takes only the methods it knows, in capitals: what it hands over is the method as sent.
  const method = req.method ?? 'GET';
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  // As the uWS server reads them: an empty header is absent, and of a repeated one the first
  // line counts (node joins the lines with ", "; `Gateway-Dry-Run: true` then `false` must not
  // mean a dry run on one front end and a paid call on the other).
  const headers = requestHeaders((name) => {
    const v = req.headers[name];
    if (typeof v === 'string' && v.includes(',') && !LIST_HEADERS.has(name)) return req.headersDistinct[name]?.[0] || undefined;
    return (Array.isArray(v) ? v[0] : v) || undefined;
  }, method === 'GET' || method === 'HEAD');
  let body = EMPTY_BODY;
  if (HAS_BODY.has(method)) {
    const len = headers['content-length'];
    const collector = new BodyCollector(opts.bodyLimitBytes, len === undefined ? undefined : Number(len));
    if (collector.overflowed) response.closeAfter = true;
    req.on('data', (c: Buffer) => { if (!collector.push(c, false)) response.closeAfter = true; });
    req.on('end', () => collector.push(Buffer.alloc(0), true));
    // node reports the client leaving mid-body as an 'aborted' error: it is the client's doing, not a fault of the gateway's.
    req.on('error', () => collector.fail(clientLeft()));
    body = () => collector.take();
  }
  return {
    method,
    path: q < 0 ? url : url.slice(0, q),
    query: q < 0 ? '' : url.slice(q + 1),
    headers,
    body,
  };
}

/**
 * Bytes node's parser refuses (a raw 0xFF in the path, a missing Host, headers
 * over the cap) never reach the handler; node's own answer is an empty 400, so
 * a client would see no error body. The gateway's JSON error goes out instead,
 * and the connection closes since the parser has lost its place in the stream.
 */
function onClientError(err: Error & { code?: string; rawPacket?: Buffer }, socket: Socket): void {
  // Bytes after a request that said `Connection: close` are not read (RFC 9112 9.6), nor answered:
  // the answer to that request may still be on its way, and node closes the socket after it.
  if (err.code === 'HPE_CLOSED_CONNECTION') return;
  if (!socket.writable || err.code === 'ECONNRESET' || err.code === 'ERR_HTTP_REQUEST_TIMEOUT') { socket.destroy(); return; }
  // A method node's parser does not know is refused here; uWS hands it on and the router answers 501, so this does too.
  const error = err.code === 'HPE_INVALID_METHOD' ? new GatewayError('method_not_implemented', 'The request\'s method is not one this gateway takes.')
    : new GatewayError('invalid_request', err.code === 'HPE_HEADER_OVERFLOW' ? 'The request headers are too large.' : 'The request is not valid HTTP/1.1.');
  const requestId = newRequestId();
  const body = errorBody(error, requestId);
  // A HEAD answer has no body, even this one: the client would read it as the start of a next response.
  const head = err.rawPacket?.subarray(0, 5).toString('latin1') === 'HEAD ';
  // Destroyed once written: a client that never closes its side would otherwise hold the socket.
  socket.end(`HTTP/1.1 ${statusLine(error.status)}\r\ncontent-type: application/json\r\nx-content-type-options: nosniff\r\nx-request-id: ${requestId}\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${head ? '' : body}`, () => socket.destroy());
}

export function createNodeServer(handler: RequestHandler, opts: ServerOptions): HttpServer {
  const t = opts.timeouts ?? DEFAULT_TIMEOUTS;
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    // RFC 9112 3.2: an HTTP/1.1 request without Host is a 400. node's own check answers it
    // with an empty body, so it is off (requireHostHeader) and the JSON error goes out here.
    if (req.headers.host === undefined && req.httpVersionMajor === 1 && req.httpVersionMinor === 1) {
      // Through the response, so node's timeouts and its close apply (a bare socket.end() left a
      // client that never sent FIN holding the socket for ever); node withholds a HEAD's body.
      const requestId = newRequestId();
      const body = errorBody(new GatewayError('invalid_request', 'The request has no Host header.'), requestId);
      res.writeHead(400, ['content-type', 'application/json', 'content-length', String(Buffer.byteLength(body)), 'x-content-type-options', 'nosniff', 'x-request-id', requestId, 'connection', 'close']);
      res.end(body);
      return;
    }
    const response = new NodeResponse(res, t.stalledWriteMs);
    guarded(opts, response, () => handler(accept(req, response, opts), response));
  };
  const server = createServer({
    requireHostHeader: false,
    headersTimeout: t.headersMs,
    requestTimeout: t.requestMs,
    keepAliveTimeout: t.idleMs,
    // node checks the two request timeouts only on this sweep (30 s by default), so a
    // slowloris client would outlive a short headers timeout by up to that much.
    connectionsCheckingInterval: Math.max(100, Math.min(1_000, Math.floor(t.headersMs / 2))),
  }, onRequest);
  server.on('clientError', onClientError);
  // An Expect other than 100-continue: node would answer an empty 417 itself. uWS ignores
  // the field, as RFC 9110 allows, so this front end serves the request the same way.
  server.on('checkExpectation', onRequest);
  return {
    kind: 'node',
    listen(host, port) {
      return new Promise((ok, fail) => {
        server.once('error', fail);
        server.listen(port, host, () => ok((server.address() as AddressInfo).port));
      });
    },
    close() {
      // Listening stops at once. server.close's callback would wait for every connection to end,
      // past server.shutdown_grace_ms and for ever on a stream that never does: the app bounds the
      // wait for in-flight requests itself, then closes what is left (closeConnections).
      server.close();
      server.closeIdleConnections();
      return Promise.resolve();
    },
    closeConnections() {
      server.closeAllConnections();
    },
  };
}
