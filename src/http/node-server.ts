// node:http fallback, for platforms where the uWebSockets.js binary cannot load.
// Same interface and the same body cap as the uWS server.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BodyCollector, EMPTY_BODY } from './body-collector.js';
import { ClientSignal } from './client-signal.js';
import type { GatewayRequest, GatewayResponse, HeaderList, HttpServer, RequestHandler, ServerOptions } from './types.js';

const HAS_BODY = new Set(['POST', 'PUT', 'PATCH']);

class NodeResponse implements GatewayResponse {
  readonly signal = new ClientSignal();
  aborted = false;
  started = false;
  closeAfter = false;

  constructor(private readonly res: ServerResponse) {
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
      const done = () => { this.res.off('drain', done); this.res.off('close', done); ok(); };
      this.res.on('drain', done);
      this.res.on('close', done);
    });
  }

  endStream(last?: string): void {
    if (this.aborted || this.res.writableEnded) return;
    this.res.end(last);
  }
}

function accept(req: IncomingMessage, res: ServerResponse, opts: ServerOptions): { request: GatewayRequest; response: NodeResponse } {
  const method = (req.method ?? 'GET').toUpperCase();
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
  const response = new NodeResponse(res);
  let body = EMPTY_BODY;
  if (HAS_BODY.has(method)) {
    const len = headers['content-length'];
    const collector = new BodyCollector(opts.bodyLimitBytes, len === undefined ? undefined : Number(len));
    if (collector.overflowed) response.closeAfter = true;
    req.on('data', (c: Buffer) => { if (!collector.push(c, false)) response.closeAfter = true; });
    req.on('end', () => collector.push(Buffer.alloc(0), true));
    req.on('error', (e) => collector.fail(e));
    body = collector.promise;
  }
  const request: GatewayRequest = {
    method,
    path: q < 0 ? url : url.slice(0, q),
    query: q < 0 ? '' : url.slice(q + 1),
    headers,
    body: () => body,
  };
  return { request, response };
}

export function createNodeServer(handler: RequestHandler, opts: ServerOptions): HttpServer {
  const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    const { request, response } = accept(req, res, opts);
    handler(request, response);
  });
  return {
    kind: 'node',
    listen(host, port) {
      return new Promise((ok, fail) => {
        server.once('error', fail);
        server.listen(port, host, () => ok((server.address() as AddressInfo).port));
      });
    },
    close() {
      return new Promise((ok) => {
        server.close(() => ok());
        server.closeIdleConnections();
      });
    },
  };
}
