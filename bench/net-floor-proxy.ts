// The `net floor`: the uws floor over the least an HTTP/1.1 client can be in
// Node. Kept-alive `net` sockets, one call each, and llhttp (sluice's own
// loading of it, src/upstream/h1/llhttp.ts) reading the answers, with no
// timeouts, no checks of the request head, no header object and no handler
// layer. Until 2026-11-27 it priced undici's client layer, before sluice had a
// client of its own; now the gap between it and the uws floor is what
// sluice's client (src/upstream/h1/) costs above the bare minimum.
//
// It is an instrument, not a client: it speaks only what the bench mock
// answers (no TLS, no timeouts, no 1xx).
import { connect, type Socket } from 'node:net';
import { allocParser, execute, freeParser, PARSE_OK, type ParserEvents } from '../src/upstream/h1/llhttp.js';
import { listenFloor, type FloorSink } from './floor-front.js';

class Connection implements ParserEvents {
  readonly socket: Socket;
  readonly parser = allocParser();
  sink: FloorSink | undefined;
  private contentType = '';
  /** The header name being read: llhttp hands a name split across reads over in pieces. */
  private field = '';
  private inValue = false;
  private keepAlive = false;

  constructor(host: string, port: number, private readonly idle: Connection[]) {
    this.socket = connect({ host, port, noDelay: true });
    this.socket.on('data', (read: Buffer) => {
      if (execute(this.parser, this, read) !== PARSE_OK) this.socket.destroy();
    });
    this.socket.on('error', () => {});
    this.socket.on('close', () => {
      const i = idle.indexOf(this);
      if (i >= 0) idle.splice(i, 1);
      freeParser(this.parser);
      const sink = this.sink;
      this.sink = undefined;
      sink?.error();
    });
  }

  onMessageBegin(): number { return 0; }

  onHeaderPieces(text: string, pieces: readonly number[], count: number, offset: number): number {
    for (let i = 0; i < count; i += 3) {
      const start = pieces[i + 1]! - offset;
      const piece = text.slice(start, start + pieces[i + 2]!);
      if (pieces[i] === 0) {
        this.field = this.inValue ? piece : this.field + piece;
        this.inValue = false;
      } else {
        if (this.field.toLowerCase() === 'content-type') this.contentType = (this.inValue ? this.contentType : '') + piece;
        this.inValue = true;
      }
    }
    return 0;
  }

  onHeadersComplete(status: number, _upgrade: boolean, keepAlive: boolean): number {
    this.keepAlive = keepAlive;
    this.sink?.head(status, this.contentType || 'application/json');
    return 0;
  }

  onBody(bytes: Buffer): number { this.sink?.data(bytes); return 0; }

  onMessageComplete(): number {
    const sink = this.sink;
    this.sink = undefined;
    this.contentType = '';
    this.field = '';
    this.inValue = false;
    if (this.keepAlive) this.idle.push(this);
    else this.socket.destroy();
    sink?.end();
    return 0;
  }
}

export function netFloorProxy(upstream: string, upstreamKey: string): Promise<number> {
  const url = new URL(upstream);
  const port = Number(url.port || 80);
  const idle: Connection[] = [];
  return listenFloor('net floor', upstream, (path, body, sink) => {
    const c = idle.pop() ?? new Connection(url.hostname, port, idle);
    c.sink = sink;
    c.socket.cork();
    c.socket.write(`POST ${path} HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\nauthorization: Bearer ${upstreamKey}\r\ncontent-length: ${body.length}\r\n\r\n`, 'latin1');
    c.socket.write(body);
    c.socket.uncork();
    return () => { if (c.sink === sink) c.socket.destroy(); };
  });
}
