// The `net floor`: the uws floor with undici's client swapped for the least an
// HTTP/1.1 client can be in Node. Kept-alive `net` sockets, one call each, and
// undici's own llhttp parser (its WebAssembly build, which undici feeds each
// socket read whole) reading the answers, without undici's requests, queues,
// timers and handler layers. It prices what the issue's "minimal keep-alive
// client on net with llhttp" could buy before anyone writes one: the gap
// between this row and the uws floor is what undici's client layer costs.
//
// It is an instrument, not a client: it speaks only what the bench mock
// answers (no TLS, no timeouts, no redirects or 1xx), and it loads the parser
// from a file inside the undici package, which is not a public API. Where that
// file is missing the row is left out.
import { createRequire } from 'node:module';
import { connect, type Socket } from 'node:net';
import { listenFloor, type FloorSink } from './floor-front.js';

/** llhttp's exports as undici builds them (lib/llhttp/*.wasm.js). */
interface Llhttp {
  memory: { buffer: ArrayBuffer };
  malloc(size: number): number;
  free(ptr: number): void;
  llhttp_alloc(type: number): number;
  llhttp_free(ptr: number): void;
  llhttp_execute(parser: number, data: number, length: number): number;
}
/** The WebAssembly API, which this project's TypeScript libraries (no DOM) do not declare. */
const wasmApi = (globalThis as unknown as { WebAssembly: {
  Module: new (bytes: Buffer) => object;
  Instance: new (module: object, imports: object) => { exports: unknown };
} }).WebAssembly;
const RESPONSE = 2;
const OK = 0;

interface Connection {
  readonly socket: Socket;
  readonly parser: number;
  sink: FloorSink | undefined;
  contentType: string;
  /** The header name being read: llhttp hands a name split across reads over in pieces. */
  field: string;
  inValue: boolean;
  keepAlive: boolean;
}

/**
 * What the parser is reading now: its callbacks name only the parser, so the
 * read's connection, bytes and place in the parser's memory are set around each run.
 */
const reading: { connection: Connection; read: Buffer; at: number } = {
  connection: undefined as unknown as Connection, read: Buffer.alloc(0), at: 0,
};

/** A span of the read being parsed, as a view of the socket's own bytes. */
const span = (at: number, len: number): Buffer => reading.read.subarray(at - reading.at, at - reading.at + len);

/**
 * undici's llhttp (its SIMD build where this CPU runs it, as undici chooses),
 * with callbacks that report to the connection being read.
 */
function loadParser(done: (c: Connection) => void): Llhttp {
  const require = createRequire(import.meta.url);
  const dir = `${require.resolve('undici').replace(/index\.js$/, '')}lib/llhttp/`;
  let module: object;
  try {
    module = new wasmApi.Module(require(`${dir}llhttp_simd-wasm.js`) as Buffer);
  } catch {
    module = new wasmApi.Module(require(`${dir}llhttp-wasm.js`) as Buffer);
  }
  const env = {
    wasm_on_url: () => 0,
    wasm_on_status: () => 0,
    wasm_on_message_begin: () => 0,
    wasm_on_header_field: (_p: number, at: number, len: number) => {
      const c = reading.connection;
      const piece = span(at, len).toString('latin1');
      c.field = c.inValue ? piece : c.field + piece;
      c.inValue = false;
      return 0;
    },
    wasm_on_header_value: (_p: number, at: number, len: number) => {
      const c = reading.connection;
      if (c.field.toLowerCase() === 'content-type') c.contentType = (c.inValue ? c.contentType : '') + span(at, len).toString('latin1');
      c.inValue = true;
      return 0;
    },
    wasm_on_headers_complete: (_p: number, status: number, _upgrade: number, keepAlive: number) => {
      const c = reading.connection;
      c.keepAlive = keepAlive === 1;
      c.sink?.head(status, c.contentType || 'application/json');
      return 0;
    },
    wasm_on_body: (_p: number, at: number, len: number) => { reading.connection.sink?.data(span(at, len)); return 0; },
    wasm_on_message_complete: () => { done(reading.connection); return 0; },
  };
  return new wasmApi.Instance(module, { env }).exports as Llhttp;
}

export function netFloorProxy(upstream: string, upstreamKey: string): Promise<number> {
  const url = new URL(upstream);
  const port = Number(url.port || 80);
  const idle: Connection[] = [];
  const ll = loadParser((c) => {
    const sink = c.sink;
    c.sink = undefined;
    c.contentType = '';
    c.field = '';
    c.inValue = false;
    if (c.keepAlive) idle.push(c);
    else c.socket.destroy();
    sink?.end();
  });
  // One buffer in the parser's memory, grown to the largest read, as undici keeps it.
  let bufferPtr = 0;
  let bufferSize = 0;

  const open = (): Connection => {
    const c: Connection = {
      socket: connect({ host: url.hostname, port, noDelay: true }), parser: ll.llhttp_alloc(RESPONSE),
      sink: undefined, contentType: '', field: '', inValue: false, keepAlive: false,
    };
    c.socket.on('data', (read: Buffer) => {
      if (read.length > bufferSize) {
        if (bufferPtr) ll.free(bufferPtr);
        bufferSize = Math.ceil(read.length / 4096) * 4096;
        bufferPtr = ll.malloc(bufferSize);
      }
      new Uint8Array(ll.memory.buffer, bufferPtr, bufferSize).set(read);
      reading.connection = c;
      reading.read = read;
      reading.at = bufferPtr;
      if (ll.llhttp_execute(c.parser, bufferPtr, read.length) !== OK) c.socket.destroy();
    });
    c.socket.on('error', () => {});
    c.socket.on('close', () => {
      const i = idle.indexOf(c);
      if (i >= 0) idle.splice(i, 1);
      ll.llhttp_free(c.parser);
      const sink = c.sink;
      c.sink = undefined;
      sink?.error();
    });
    return c;
  };

  return listenFloor('net floor', upstream, (path, body, sink) => {
    const c = idle.pop() ?? open();
    c.sink = sink;
    c.socket.cork();
    c.socket.write(`POST ${path} HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\nauthorization: Bearer ${upstreamKey}\r\ncontent-length: ${body.length}\r\n\r\n`, 'latin1');
    c.socket.write(body);
    c.socket.uncork();
    return () => { if (c.sink === sink) c.socket.destroy(); };
  });
}
