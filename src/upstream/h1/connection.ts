// One kept-alive HTTP/1.1 connection to an upstream, carrying one call at a
// time, with llhttp reading the answers. This is sluice's upstream client: the
// least a correct HTTP/1.1 client can be, where undici's Client (requests,
// queues, per-call timers, handler wrappers) cost 42 % of a logic-free proxy's
// instructions per JSON request and 0.1-0.2 ms of its time to first byte
// (the bench's `net floor` row measured it). It speaks undici's handler API
// (call.ts), so the exchanges above it are the ones undici drove.
//
// What it carries, and where:
// - TLS, resuming the origin's last session (OriginClients keeps it);
// - connect, headers and body timeouts, and the keep-alive idle timeout (../deadline-tick.ts);
// - the upstream's `keep-alive: timeout=N`, `connection: close` and HTTP/1.0;
// - bodies by content-length, chunked (with trailers) or delimited by the close;
// - 1xx answers skipped, an upgrade refused;
// - answers over 16 KiB of headers refused;
// - backpressure: the caller pauses the socket;
// - request heads checked against smuggling (request-head.ts);
// - a connection is reused only when its answer ended cleanly, the upstream
//   read the whole request, and nothing followed the answer.
import { connect as netConnect, type OnReadOpts, type Socket } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions, type TLSSocket } from 'node:tls';
import { AnswerHead, keepAliveTimeout } from './answer-head.js';
import { Call, Phase, type CallHandler, type CallHost, type CallOptions } from './call.js';
import { watch, unwatch, type Timed } from '../deadline-tick.js';
import { UpstreamSocketError, UpstreamTimeoutError } from './errors.js';
import { allocParser, errorReason, execute, finish, freeParser, PARSE_OK, PARSE_PAUSED, type ParserEvents } from './llhttp.js';
import { requestHead, type RequestHead } from './request-head.js';

export interface Origin {
  readonly tls: boolean;
  readonly host: string;
  readonly hostname: string;
  readonly port: number;
  /** The SNI name; undefined for an IP address. */
  readonly servername: string | undefined;
  /** The last TLS session the origin gave, resumed by the next connection. */
  session: Buffer | undefined;
}

export interface ConnectionTimeouts {
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  /** How long an idle connection is kept when the upstream's keep-alive header names no timeout. */
  keepAliveMs: number;
}

/** What a connection tells the pool that holds it. */
export interface ConnectionOwner {
  /** The call ended and the connection can carry another. */
  free(conn: H1Connection): void;
  /** The socket is connected (TLS included). */
  opened(conn: H1Connection): void;
  /** The socket closed: forget the connection. */
  closed(conn: H1Connection): void;
  /** A call the upstream dropped unheard on a connection it had kept alive: send it once more, on another; false if it will not. */
  replay(opts: CallOptions, handler: CallHandler): boolean;
}

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

/** A space or a tab, which may follow a header's value and is not part of it. */
function isBlank(c: number): boolean {
  return c === 0x20 || c === 0x09;
}

/** Answer heads larger than this are refused, as node's and undici's clients refuse them. */
const MAX_HEADER_BYTES = 16 * 1024;
/** An upstream's keep-alive timeout is trusted less this margin, so that sluice never reuses a socket as the upstream closes it. */
const KEEP_ALIVE_MARGIN_MS = 1_000;

/**
 * Every connection of a thread reads into this one buffer (node's `onread`),
 * and each read is parsed before the callback returns. A socket's 'data'
 * event cost a readable stream's push and emit, and a 64 KiB store that node
 * allocates for every read and then reallocates to the read's size: under
 * callgrind, a JSON request fell by about 4k instructions (one read) and a
 * stream paced 2 ms a chunk from 986k to 847k (a read per chunk). libuv reads
 * one socket at a time and nothing here reads another inside a parse
 * (llhttp's own buffer is one per thread too), so one buffer serves every
 * socket, and bytes a handler keeps it copies (CallHandler.onResponseData).
 * An idle socket holds no buffer of its own: 5,000 open streams cost no more
 * memory than with node's reads.
 */
const READ_BUFFER = Buffer.allocUnsafe(64 * 1024);

/** tls.connect takes `onread` as net.connect does (nodejs/node#35753); @types/node leaves it out of ConnectionOptions. */
function tlsOptions(origin: Origin, onread: OnReadOpts): ConnectionOptions & { onread: OnReadOpts } {
  return { host: origin.hostname, port: origin.port, servername: origin.servername, session: origin.session, ALPNProtocols: ['http/1.1'], onread };
}

export class H1Connection implements CallHost, ParserEvents, Timed {
  deadline = Infinity;
  /** Where the connection is in its pool's idle stack; -1 while it carries a call. */
  idleAt = -1;
  isConnected = false;
  isClosed = false;

  private readonly socket: Socket;
  private parser: number;
  private call: Call | undefined;
  /** The socket's error, reported when it closes if no call took it first. */
  private error: Error | undefined;
  /** Whether the connection can carry another call after this answer. */
  private reusable = false;
  /** Answers this connection carried whole: a call after the first goes on a kept-alive socket. */
  private served = 0;
  private keepAliveMs: number;

  // The answer being read.
  /** The head's latin1 text so far, and where each header's name and value sit in it (AnswerHead). */
  private headText = '';
  private spans: number[] = [];
  private headerBytes = 0;

  constructor(private readonly origin: Origin, private readonly timeouts: ConnectionTimeouts, private readonly owner: ConnectionOwner) {
    this.keepAliveMs = timeouts.keepAliveMs;
    this.parser = allocParser();
    const onread: OnReadOpts = { buffer: READ_BUFFER, callback: this.onRead };
    this.socket = origin.tls ? tlsConnect(tlsOptions(origin, onread)) : netConnect({ host: origin.hostname, port: origin.port, onread });
    this.socket.setNoDelay(true);
    // Probes a connection that carries nothing for a minute, as undici's connector does: a peer
    // gone without a word (a NAT's table, a crashed host) is found even between body deadlines.
    this.socket.setKeepAlive(true, 60_000);
    this.deadline = Date.now() + timeouts.connectTimeoutMs;
    watch(this);
    if (origin.tls) {
      const tls = this.socket as TLSSocket;
      tls.on('secureConnect', this.onConnect);
      tls.on('session', (session: Buffer) => { origin.session = session; });
    } else {
      this.socket.on('connect', this.onConnect);
    }
    this.socket.on('end', this.onEnd);
    this.socket.on('error', this.onError);
    this.socket.on('close', this.onClose);
  }

  /** Sends a call. Its handler hears of it through onRequestStart, and of every outcome after. */
  dispatch(opts: CallOptions, handler: CallHandler, replay = false): void {
    const call = new Call(this, handler, opts.method, this.served > 0 && !replay ? opts : undefined);
    this.call = call;
    handler.onRequestStart?.(call, undefined);
    // Aborted as it was handed over (its caller already gone): nothing was sent, so the connection is as good as before.
    if (call.aborted) return;
    let head: RequestHead;
    const body = opts.body ?? '';
    try {
      head = requestHead(opts.method, opts.path, this.origin.host, opts.headers ?? NO_HEADERS, Buffer.byteLength(body));
    } catch (err) {
      this.refuse(call, err as Error);
      return;
    }
    this.reusable = false;
    call.written = true;
    // One write of one string: a corked pair went through the stream's buffered writev, which cost
    // 6k instructions of a JSON request's 240k. Only an ASCII head may go as UTF-8 with its body;
    // a head with obs-text keeps its latin1 bytes.
    if (typeof body === 'string' && head.ascii) {
      this.socket.write(head.text + body);
    } else {
      this.socket.cork();
      this.socket.write(head.text, 'latin1');
      if (body.length > 0) this.socket.write(body);
      this.socket.uncork();
    }
    if (this.isConnected) this.deadline = Date.now() + this.timeouts.headersTimeoutMs;
  }

  /** Closes the connection; a call on it fails with `err`, or with "other side closed" if none is given. */
  destroy(err?: Error): void {
    this.socket.destroy(err);
  }

  /** False once the socket is destroyed, before node reports it closed: no call may be given it. */
  get usable(): boolean {
    return !this.socket.destroyed;
  }

  /** The pool keeps the connection idle until the keep-alive timeout; one still connecting keeps its connect deadline. */
  idle(): void {
    if (this.isConnected) this.deadline = Date.now() + this.keepAliveMs;
  }

  /** Ends `call` with `err`; the connection goes with it, unless nothing had been sent. */
  fail(call: Call, err: Error): void {
    if (this.call !== call) return;
    if (!call.written) return this.refuse(call, err);
    this.call = undefined;
    call.phase = Phase.Done;
    this.deadline = Infinity;
    this.socket.destroy();
    call.handler.onResponseError?.(call, err);
  }

  pauseReading(): void {
    this.socket.pause();
    // A paused call is the caller's doing: the upstream is not late.
    this.deadline = Infinity;
  }

  resumeReading(): void {
    this.socket.resume();
    this.deadline = Date.now() + this.timeouts.bodyTimeoutMs;
  }

  /** Ends a call that never reached the socket: the connection is still good, and goes back to the pool after this turn. */
  private refuse(call: Call, err: Error): void {
    this.call = undefined;
    call.phase = Phase.Done;
    call.handler.onResponseError?.(call, err);
    // Not from inside the call's own dispatch, which the pool's next call would re-enter.
    queueMicrotask(() => { if (!this.isClosed && !this.call) this.owner.free(this); });
  }

  expired(): void {
    const call = this.call;
    if (!call) {
      if (!this.isConnected) return void this.socket.destroy(new UpstreamTimeoutError('Connect Timeout Error'));
      // Idle past the keep-alive timeout: closed before the upstream closes it under a new call.
      return void this.socket.destroy();
    }
    const timeout = !this.isConnected ? 'Connect Timeout Error' : call.phase === Phase.Head ? 'Headers Timeout Error' : 'Body Timeout Error';
    this.fail(call, new UpstreamTimeoutError(timeout));
  }

  private readonly onConnect = (): void => {
    this.isConnected = true;
    this.deadline = this.call ? Date.now() + this.timeouts.headersTimeoutMs : Date.now() + this.keepAliveMs;
    this.owner.opened(this);
  };

  /** `n` bytes read into READ_BUFFER; true keeps the socket reading (the caller pauses it through the call). */
  private readonly onRead = (n: number): boolean => {
    // Destroyed in this turn (a timeout, an abort): what was already read is nobody's.
    if (this.socket.destroyed) return true;
    if (!this.call) {
      // Bytes on an idle connection answer nothing that was asked: the connection cannot be trusted with a call.
      this.socket.destroy();
      return true;
    }
    // The body deadline runs from the last read, not the last chunked frame: one clock read per read.
    const call = this.call;
    // The upstream is answering: it read the call, which is never sent again.
    call.resend = undefined;
    if (call.phase === Phase.Body && !call.paused) this.deadline = Date.now() + this.timeouts.bodyTimeoutMs;
    let ret: number;
    try {
      ret = execute(this.parser, this, READ_BUFFER.subarray(0, n));
    } catch (err) {
      // A handler threw inside the parse: the call ends with its error, not the process.
      if (this.call) this.fail(this.call, err as Error);
      else this.socket.destroy();
      return true;
    }
    this.afterParse(ret);
    return true;
  };

  private afterParse(ret: number): void {
    if (this.socket.destroyed) return;
    const call = this.call;
    if (ret !== PARSE_OK && ret !== PARSE_PAUSED) {
      const err = new UpstreamSocketError(`Response does not match the HTTP/1.1 protocol (${errorReason(this.parser)})`);
      if (call) return this.fail(call, err);
      return void this.socket.destroy();
    }
    if (call) return;
    // The answer ended in this read.
    if (!this.reusable) return void this.socket.destroy();
    this.reusable = false;
    this.owner.free(this);
  }

  private readonly onEnd = (): void => {
    // An answer delimited by the connection's close is whole now; llhttp says so through onMessageComplete.
    if (this.call && this.call.phase === Phase.Body) {
      const ret = finish(this.parser, this);
      if (ret !== PARSE_OK && ret !== PARSE_PAUSED && this.call) this.fail(this.call, new UpstreamSocketError('other side closed'));
    }
    this.socket.destroy();
  };

  private readonly onError = (err: Error): void => {
    this.error ??= err;
    if (this.origin.tls) this.origin.session = undefined;
  };

  private readonly onClose = (): void => {
    this.isClosed = true;
    unwatch(this);
    // Not freed inside a parse: node emits 'close' on a later tick than the destroy.
    freeParser(this.parser);
    this.parser = 0;
    const call = this.call;
    this.owner.closed(this);
    if (call) {
      this.call = undefined;
      call.phase = Phase.Done;
      const resend = this.droppedUnheard(call);
      if (!resend || !this.owner.replay(resend, call.handler)) {
        call.handler.onResponseError?.(call, this.error ?? new UpstreamSocketError('other side closed'));
      }
    }
  };

  /**
   * The upstream closed a kept-alive connection as a call went out on it, and
   * sent not a byte back: it closed the connection idle, as servers do after
   * their keep-alive timeout, and never read the call. Such a call is safe to
   * send again, a POST included (Go's transport replays the same case); failing
   * it cost the caller a retry's backoff (250 ms by default) and an attempt
   * the upstream never saw. Once only: a second drop is the upstream's answer.
   * What to send again, or undefined.
   */
  private droppedUnheard(call: Call): CallOptions | undefined {
    return call.written && !call.aborted ? call.resend : undefined;
  }

  // llhttp's events, for the answer to this.call.

  onMessageBegin(): number {
    // An answer nobody asked for (more bytes after the last one): the parse stops, and the connection goes.
    if (!this.call) return -1;
    this.startHead();
    return PARSE_OK;
  }

  /**
   * A read's header pieces (ParserEvents). Names and values take turns in
   * `spans`: a piece starts a new span where one of its kind is due, and
   * otherwise continues the last (a name or value that came in pieces, split
   * between reads): the two are joined at the end of the text, rarely.
   */
  onHeaderPieces(text: string, pieces: readonly number[], count: number, offset: number): number {
    // Where a piece's place in the read falls in the head's text.
    const shift = this.headText.length - offset;
    this.headText += text;
    const s = this.spans;
    for (let i = 0; i < count; i += 3) {
      const length = pieces[i + 2]!;
      if (this.overHeaderCap(length)) return -1;
      const start = pieces[i + 1]! + shift;
      if ((s.length >> 1) % 2 === pieces[i]) {
        s.push(start, start + length);
      } else {
        const joined = this.headText.slice(s[s.length - 2], s[s.length - 1]) + this.headText.slice(start, start + length);
        s[s.length - 2] = this.headText.length;
        this.headText += joined;
        s[s.length - 1] = this.headText.length;
      }
    }
    return PARSE_OK;
  }

  private startHead(): void {
    this.headText = '';
    this.spans = [];
    this.headerBytes = 0;
  }

  private overHeaderCap(n: number): boolean {
    this.headerBytes += n;
    if (this.headerBytes <= MAX_HEADER_BYTES || !this.call) return false;
    this.fail(this.call, new UpstreamSocketError(`The upstream's answer has more than ${MAX_HEADER_BYTES} bytes of headers.`));
    return true;
  }

  onHeadersComplete(status: number, upgrade: boolean, keepAlive: boolean): number {
    const call = this.call;
    if (!call) return -1;
    if (upgrade) {
      this.fail(call, new UpstreamSocketError('bad upgrade'));
      return -1;
    }
    // An interim answer (100 Continue, 103 Early Hints): the final one follows on the same connection.
    if (status < 200) {
      this.startHead();
      return 1;
    }
    const head = this.takeHead();
    this.reusable = keepAlive;
    if (keepAlive) {
      const ka = head.get('keep-alive');
      const upstreamMs = ka === undefined ? undefined : keepAliveTimeout(ka);
      if (upstreamMs !== undefined) {
        const ms = upstreamMs - KEEP_ALIVE_MARGIN_MS;
        if (ms <= 0) this.reusable = false;
        else this.keepAliveMs = Math.min(ms, this.timeouts.keepAliveMs);
      }
    }
    call.phase = Phase.Body;
    this.deadline = call.paused ? Infinity : Date.now() + this.timeouts.bodyTimeoutMs;
    call.handler.onResponseStart?.(call, status, head, '');
    if (this.call !== call) return PARSE_PAUSED;
    return call.method === 'HEAD' ? 1 : PARSE_OK;
  }

  /** The headers read since the last head; the next head starts afresh. */
  private takeHead(): AnswerHead {
    const text = this.headText;
    const s = this.spans;
    // llhttp drops the whitespace before a value, not after it.
    for (let i = 3; i < s.length; i += 4) {
      let end = s[i]!;
      while (end > s[i - 1]! && isBlank(text.charCodeAt(end - 1))) end--;
      s[i] = end;
    }
    const head = new AnswerHead(text, s);
    this.startHead();
    return head;
  }

  onBody(bytes: Buffer): number {
    const call = this.call;
    if (!call) return PARSE_PAUSED;
    call.handler.onResponseData?.(call, bytes);
    return this.call === call ? PARSE_OK : PARSE_PAUSED;
  }

  onMessageComplete(): number {
    const call = this.call;
    if (!call) return PARSE_PAUSED;
    if (call.phase !== Phase.Body) return PARSE_OK; // the end of an interim answer
    const trailers = this.spans.length ? this.takeHead() : AnswerHead.EMPTY;
    this.call = undefined;
    call.phase = Phase.Done;
    this.served++;
    this.deadline = Infinity;
    // An answer that came before the upstream had read the whole request leaves the rest of it in the way of the next call.
    if (this.socket.writableLength > 0) this.reusable = false;
    // Paused by the caller in this very read: the socket must flow for whatever call comes next.
    if (call.paused) this.socket.resume();
    call.handler.onResponseEnd?.(call, trailers);
    return PARSE_OK;
  }
}
