// llhttp, the HTTP/1.1 parser behind node's and undici's clients, in the
// WebAssembly build undici ships (its SIMD build where the CPU runs it, as
// undici chooses). sluice reads every upstream answer with it. The build is a
// file inside the undici package, not its public API: the lockfile pins the
// version, and test/h1-connection.test.ts fails if the file moves.
//
// Each socket read is copied into the parser's memory whole and parsed in one
// call; the callbacks name only the parser, so the connection being read and
// the read itself are set around each call (one parse runs at a time per
// thread). Body bytes are handed on as views of the read, which is the
// thread's one read buffer (connection.ts): valid until the handler returns.
//
// A read's body pieces reach the reader as one view: a burst of chunked frames
// in one read (an SSE stream's chunks, each written as a frame) is moved
// together in place, over the frame heads between them, and handed on once,
// when the read is parsed or its message completes. A view, a decode and an
// SSE parse per frame cost about 2.5k instructions a frame: an unpaced
// 20-chunk stream fell from 465k to 406k with them gone. Header names and
// values are likewise handed on as places in one decode of the head (see
// headerPieces).
import { createRequire } from 'node:module';

/** What llhttp reports to the connection it is reading for; a non-zero return stops the parse. */
export interface ParserEvents {
  onMessageBegin(): number;
  /**
   * A read's header names and values, in order: `text` is the read's latin1
   * text from the first to the end of the last, and `pieces` holds (place,
   * start, length) triples, place 0 a name's and 1 a value's, the first
   * `count` numbers of `pieces`; a piece starts at `start - offset` in `text`
   * (its place in the read: left as it is, rather than rewritten per piece
   * before the reader places it again). A name or value split between reads
   * comes in two pieces, one in each read's text. `pieces` is the parser's,
   * valid only during the call.
   */
  onHeaderPieces(text: string, pieces: readonly number[], count: number, offset: number): number;
  /** 1 skips the body (HEAD, 1xx); llhttp's own return codes otherwise. */
  onHeadersComplete(status: number, upgrade: boolean, keepAlive: boolean): number;
  /** Body bytes: all of one read's for the message, in one view of the read, valid only during the call. */
  onBody(bytes: Buffer): number;
  onMessageComplete(): number;
}

interface Exports {
  memory: { buffer: ArrayBuffer };
  malloc(size: number): number;
  free(ptr: number): void;
  llhttp_alloc(type: number): number;
  llhttp_free(ptr: number): void;
  llhttp_execute(parser: number, data: number, length: number): number;
  llhttp_finish(parser: number): number;
  llhttp_get_error_reason(parser: number): number;
}

/** The WebAssembly API, which this project's TypeScript libraries (no DOM) do not declare. */
const wasm = (globalThis as unknown as { WebAssembly: {
  Module: new (bytes: Buffer) => object;
  Instance: new (module: object, imports: object) => { exports: unknown };
} }).WebAssembly;

const TYPE_RESPONSE = 2;
export const PARSE_OK = 0;
/** llhttp's HPE_PAUSED: a callback stopped the parse on purpose. */
export const PARSE_PAUSED = 21;

const EMPTY = Buffer.alloc(0);
let reader: ParserEvents;
let read: Buffer = EMPTY;
/** Where `read` starts in the parser's memory. */
let base = 0;
/** Where the read's body bytes not yet handed on start and end in it (start < 0: none), moved together. */
let bodyStart = -1;
let bodyEnd = 0;

/** A body piece at `at` in the parser's memory: moved in the read up against the pieces before it. */
function gather(at: number, len: number): number {
  const start = at - base;
  if (bodyStart < 0) {
    bodyStart = start;
    bodyEnd = start + len;
    return PARSE_OK;
  }
  if (start !== bodyEnd) read.copyWithin(bodyEnd, start, start + len);
  bodyEnd += len;
  return PARSE_OK;
}

/** Hands the gathered body bytes to the reader, as one view of the read; its answer, or PARSE_OK if there were none. */
function flushBody(): number {
  if (bodyStart < 0) return PARSE_OK;
  const bytes = read.subarray(bodyStart, bodyEnd);
  bodyStart = -1;
  return reader.onBody(bytes);
}

/**
 * The read's header pieces not yet handed on, as (place, start, length)
 * triples: place 0 a name, 1 a value. They are handed on at the end of the
 * head, of the trailers or of the read, with one latin1 decode of the span
 * they cover: a decode per piece (Buffer#toString, its checks, a native
 * call) cost about 600 instructions a piece, ten pieces for an answer of five
 * headers, and a slice per piece, cut whether anything read it or not, cost
 * more again on a head of many (answer-head.ts).
 */
const headerPieces: number[] = [];
/** How many numbers of headerPieces are this read's: the array keeps its length, as emptying it gives up its store. */
let pieceCount = 0;

function headerPiece(place: 0 | 1, at: number, len: number): number {
  headerPieces[pieceCount] = place;
  headerPieces[pieceCount + 1] = at - base;
  headerPieces[pieceCount + 2] = len;
  pieceCount += 3;
  return PARSE_OK;
}

/** Hands the read's header pieces to the reader, placed in their text; its answer, or PARSE_OK if there were none. */
function flushHeaders(): number {
  const n = pieceCount;
  if (n === 0) return PARSE_OK;
  const from = headerPieces[1]!;
  const text = read.toString('latin1', from, headerPieces[n - 2]! + headerPieces[n - 1]!);
  pieceCount = 0;
  return reader.onHeaderPieces(text, headerPieces, n, from);
}

function load(): Exports {
  const require = createRequire(import.meta.url);
  const dir = `${require.resolve('undici').replace(/index\.js$/, '')}lib/llhttp/`;
  let module: object;
  try {
    module = new wasm.Module(require(`${dir}llhttp_simd-wasm.js`) as Buffer);
  } catch {
    module = new wasm.Module(require(`${dir}llhttp-wasm.js`) as Buffer);
  }
  const env = {
    wasm_on_url: () => 0,
    wasm_on_status: () => 0,
    wasm_on_message_begin: () => reader.onMessageBegin(),
    wasm_on_header_field: (_p: number, at: number, len: number) => headerPiece(0, at, len),
    wasm_on_header_value: (_p: number, at: number, len: number) => headerPiece(1, at, len),
    // The head's pieces go before its end; a refusal of one (past the header cap) is llhttp's -1, an error.
    wasm_on_headers_complete: (_p: number, status: number, upgrade: number, keepAlive: number) =>
      (flushHeaders() === PARSE_OK ? reader.onHeadersComplete(status, upgrade === 1, keepAlive === 1) : -1),
    wasm_on_body: (_p: number, at: number, len: number) => gather(at, len),
    // The message's body, then its trailers (header pieces after the body), go before its end.
    wasm_on_message_complete: () => {
      let r = flushBody();
      if (r === PARSE_OK) r = flushHeaders();
      return r === PARSE_OK ? reader.onMessageComplete() : r;
    },
  };
  return new wasm.Instance(module, { env }).exports as Exports;
}

let ll: Exports | undefined;
/** One buffer in the parser's memory, grown to the largest read, as undici keeps it. */
let bufferPtr = 0;
let bufferSize = 0;
/** A view of the parser's whole memory, made again only when the memory grows (its ArrayBuffer is then a new one). */
let memory = new Uint8Array(0);

/** A response parser for one connection; free it when the connection closes. */
export function allocParser(): number {
  ll ??= load();
  return ll.llhttp_alloc(TYPE_RESPONSE);
}

export function freeParser(ptr: number): void {
  ll!.llhttp_free(ptr);
}

/** Parses one socket read for `events`; llhttp's error code, PARSE_OK when all of it was read. */
export function execute(ptr: number, events: ParserEvents, chunk: Buffer): number {
  const x = ll!;
  if (chunk.length > bufferSize) {
    if (bufferPtr) x.free(bufferPtr);
    bufferSize = Math.ceil(chunk.length / 4096) * 4096;
    bufferPtr = x.malloc(bufferSize);
  }
  if (memory.buffer !== x.memory.buffer) memory = new Uint8Array(x.memory.buffer);
  memory.set(chunk, bufferPtr);
  reader = events;
  read = chunk;
  base = bufferPtr;
  try {
    const r = x.llhttp_execute(ptr, bufferPtr, chunk.length);
    // What the read held of a head or a body that goes on in later reads; delivered before a parse error is reported, as it was read.
    const delivered = flushBody();
    const heads = flushHeaders();
    if (r !== PARSE_OK) return r;
    return delivered === PARSE_OK ? heads : delivered;
  } finally {
    bodyStart = -1;
    pieceCount = 0;
    read = EMPTY;
  }
}

/** The socket ended: an answer delimited by the connection's close is complete now. */
export function finish(ptr: number, events: ParserEvents): number {
  reader = events;
  return ll!.llhttp_finish(ptr);
}

/** Why the parse failed, in llhttp's words. */
export function errorReason(ptr: number): string {
  const x = ll!;
  const at = x.llhttp_get_error_reason(ptr);
  if (!at) return 'unknown';
  const bytes = new Uint8Array(x.memory.buffer, at);
  return Buffer.from(x.memory.buffer, at, bytes.indexOf(0)).toString('latin1');
}
