// One upstream origin's connections (h1/connection.ts), each carrying one call
// at a time (HTTP/1.1 without pipelining), handed out from a stack of idle ones.
//
// A pool that finds a free connection by walking all it holds pays for every
// busy one, and a model call holds its connection for the whole answer: with
// 5,000 streams open, undici's Pool spent 111-147 µs of dispatch per new call,
// against 12-14 µs from a stack at any count (bench/dispatch-open-calls.ts).
// Here a call takes the most recently idle connection (its socket the warmest
// and the least likely to have been closed by the upstream), or opens one, in
// constant time.
//
// Every connection of an origin resumes the origin's last TLS session, so a
// new connection to an HTTPS upstream skips the full handshake.
import { isIP } from 'node:net';
import type { CallHandler, CallOptions } from './h1/call.js';
import { H1Connection, type ConnectionOwner, type Origin } from './h1/connection.js';

export type { CallController, CallHandler, CallOptions } from './h1/call.js';

export interface OriginOptions {
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  /** Concurrent calls to the origin; undefined for no cap. */
  connections: number | undefined;
}

/** How long an idle connection is kept for the next call when the upstream's keep-alive header gives no timeout. */
const KEEP_ALIVE_MS = 30_000;

interface Waiting { opts: CallOptions; handler: CallHandler; replay: boolean }

function parseOrigin(origin: string): Origin {
  const url = new URL(origin);
  const tls = url.protocol === 'https:';
  // An IPv6 literal keeps its brackets in the URL's hostname, not in what connect() takes.
  const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return {
    tls, host: url.host, hostname, port: Number(url.port) || (tls ? 443 : 80), servername: isIP(hostname) ? undefined : hostname, session: undefined,
  };
}

export class OriginClients implements ConnectionOwner {
  private readonly idle: H1Connection[] = [];
  /** Calls past the cap, first come first served. */
  private readonly waiting: Waiting[] = [];
  /** Connections held, busy or idle (or connecting). */
  private size = 0;
  /** Connections whose socket is connected. */
  private sockets = 0;
  private closing: Promise<void> | undefined;
  private onEmpty: (() => void) | undefined;
  private readonly origin: Origin;
  private readonly timeouts;

  constructor(origin: string, private readonly opts: OriginOptions) {
    this.origin = parseOrigin(origin);
    this.timeouts = { ...opts, keepAliveMs: KEEP_ALIVE_MS };
  }

  /** Calls waiting for a connection under the cap. */
  get queued(): number { return this.waiting.length; }

  /** Connections open now. */
  get connected(): number { return this.sockets; }

  /** Connections held, busy or idle: at most one per call in flight, plus the idle ones kept alive. */
  get clients(): number { return this.size; }

  dispatch(opts: CallOptions, handler: CallHandler): void {
    const conn = this.takeIdle() ?? this.open();
    if (conn) conn.dispatch(opts, handler);
    else this.waiting.push({ opts, handler, replay: false });
  }

  private takeIdle(): H1Connection | undefined {
    for (;;) {
      const conn = this.idle.pop();
      if (!conn) return undefined;
      conn.idleAt = -1;
      // Destroyed (timed out, or closed by the upstream) and not yet reported closed: it goes when node reports it.
      if (conn.usable) return conn;
    }
  }

  private open(): H1Connection | undefined {
    if (this.opts.connections !== undefined && this.size >= this.opts.connections) return undefined;
    this.size++;
    return new H1Connection(this.origin, this.timeouts, this);
  }

  /** The connection's call has ended: the next waiting call takes it, or it waits idle. */
  free(conn: H1Connection): void {
    const next = this.waiting.shift();
    if (next) return conn.dispatch(next.opts, next.handler, next.replay);
    if (this.closing) return conn.destroy();
    conn.idle();
    conn.idleAt = this.idle.push(conn) - 1;
  }

  opened(): void {
    this.sockets++;
  }

  closed(conn: H1Connection): void {
    if (conn.isConnected) this.sockets--;
    if (conn.idleAt >= 0) {
      // Swap-remove: the stack's order is only a preference, and this keeps removal constant-time.
      const last = this.idle.pop()!;
      if (last !== conn) { this.idle[conn.idleAt] = last; last.idleAt = conn.idleAt; }
      conn.idleAt = -1;
    }
    this.size--;
    // Its place under the cap is free: a waiting call opens a connection of its own.
    const next = this.waiting.length > 0 ? this.open() : undefined;
    if (next) {
      const { opts, handler, replay } = this.waiting.shift()!;
      return next.dispatch(opts, handler, replay);
    }
    if (this.size === 0) this.onEmpty?.();
  }

  /**
   * A call the upstream dropped unheard as it closed a kept-alive connection
   * (H1Connection.droppedUnheard): sent again at once on a new connection,
   * which the upstream cannot have closed idle, or first in line under the cap.
   * Not once the pool is closing: the call then fails as it would have.
   */
  replay(opts: CallOptions, handler: CallHandler): boolean {
    if (this.closing) return false;
    const conn = this.open();
    if (conn) conn.dispatch(opts, handler, true);
    else this.waiting.unshift({ opts, handler, replay: true });
    return true;
  }

  /** Lets the calls in flight and those waiting finish, then closes every connection. */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((ok) => {
      this.onEmpty = ok;
      for (const conn of this.idle.splice(0)) { conn.idleAt = -1; conn.destroy(); }
      if (this.size === 0) ok();
    });
    return this.closing;
  }
}
