// The `net floor`: the uws floor with undici swapped for the least an HTTP/1.1
// client can be in Node. Kept-alive `net` sockets, one call each, and node's own
// llhttp parser (the one node:http uses) reading the answers. It prices what
// the "minimal keep-alive client on net with llhttp" could buy before
// anyone writes one: the gap between this row and the uws floor is undici's
// share of sluice's floor.
//
// It is an instrument, not a client: it speaks only what the bench mock
// answers (no TLS, no timeouts, no redirects or 1xx), and it reaches the parser
// through `_http_common`, node's internal module behind node:http, which is not
// a public API. Where that module has no parser the row is left out.
import { createRequire } from 'node:module';
import { connect, type Socket } from 'node:net';
import { listenFloor, type FloorSink } from './floor-front.js';

/** The slice of node's internal HTTPParser (lib/_http_common.js) this uses. */
interface Parser {
  initialize(type: number, resource: object, maxHeaderSize: number, lenient: number): void;
  execute(data: Buffer): number | Error;
  close(): void;
  [callback: number]: unknown;
}
interface ParserClass {
  new (): Parser;
  RESPONSE: number;
  kOnHeaders: number;
  kOnHeadersComplete: number;
  kOnBody: number;
  kOnMessageComplete: number;
}

/** node's HTTPParser, or undefined where `_http_common` no longer has it. */
export function nodeParser(): ParserClass | undefined {
  try {
    const P = (createRequire(import.meta.url)('_http_common') as { HTTPParser?: ParserClass }).HTTPParser;
    return typeof P === 'function' && typeof P.kOnHeadersComplete === 'number' ? P : undefined;
  } catch {
    return undefined;
  }
}

export function netFloorProxy(upstream: string, upstreamKey: string): Promise<number> {
  const HTTPParser = nodeParser();
  if (!HTTPParser) throw new Error('this Node has no HTTPParser in _http_common: the net floor cannot run.');
  const url = new URL(upstream);
  const port = Number(url.port || 80);
  const idle: Connection[] = [];

  class Connection {
    readonly socket: Socket = connect({ host: url.hostname, port, noDelay: true });
    readonly parser = new HTTPParser!();
    sink: FloorSink | undefined;
    /** Header pairs delivered before the head ended (llhttp hands over more than 32 in batches). */
    early: string[] = [];
    keepAlive = false;

    constructor() {
      this.parser.initialize(HTTPParser!.RESPONSE, {}, 0, 0);
      this.parser[HTTPParser!.kOnHeaders] = (headers: string[]) => { this.early.push(...headers); };
      this.parser[HTTPParser!.kOnHeadersComplete] = (_major: number, _minor: number, headers: string[] | undefined, _method: unknown, _url: unknown, status: number, _message: unknown, _upgrade: boolean, keepAlive: boolean) => {
        const all = headers ? (this.early.length ? [...this.early, ...headers] : headers) : this.early;
        this.early = [];
        let contentType = 'application/json';
        for (let i = 0; i < all.length; i += 2) if (all[i]!.toLowerCase() === 'content-type') contentType = all[i + 1]!;
        this.keepAlive = keepAlive;
        this.sink?.head(status, contentType);
        return 0;
      };
      this.parser[HTTPParser!.kOnBody] = (chunk: Buffer) => { this.sink?.data(chunk); };
      this.parser[HTTPParser!.kOnMessageComplete] = () => {
        const sink = this.sink;
        this.sink = undefined;
        if (this.keepAlive) idle.push(this);
        else this.socket.destroy();
        sink?.end();
      };
      this.socket.on('data', (data: Buffer) => { if (this.parser.execute(data) instanceof Error) this.socket.destroy(); });
      this.socket.on('error', () => {});
      this.socket.on('close', () => {
        const i = idle.indexOf(this);
        if (i >= 0) idle.splice(i, 1);
        this.parser.close();
        const sink = this.sink;
        this.sink = undefined;
        sink?.error();
      });
    }
  }

  return listenFloor('net floor', upstream, (path, body, sink) => {
    const c = idle.pop() ?? new Connection();
    c.sink = sink;
    c.socket.cork();
    c.socket.write(`POST ${path} HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\nauthorization: Bearer ${upstreamKey}\r\ncontent-length: ${body.length}\r\n\r\n`, 'latin1');
    c.socket.write(body);
    c.socket.uncork();
    return () => { if (c.sink === sink) c.socket.destroy(); };
  });
}
