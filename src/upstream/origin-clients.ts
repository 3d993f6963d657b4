// One upstream origin's connections: undici Clients, each carrying one call at
// a time (HTTP/1.1 without pipelining), handed out from a stack of idle ones.
//
// undici's Pool finds a free client by walking every client it has, and walks
// them again after each dispatch to learn whether another is free. A model
// call holds its connection for the whole answer, so a gateway with thousands
// of streams open paid for walking thousands of busy clients twice per new
// call: 111-147 µs of dispatch per call with 5,000 open, against 12-14 µs
// from a stack at any count (bench/dispatch-open-calls.ts). Here a call takes the most
// recently idle client (its socket the warmest and the least likely to have
// been closed by the upstream), or opens one, in constant time.
//
// Every client of an origin connects through one connector, as a Pool's do:
// the connector holds the TLS session cache, so a new connection to an HTTPS
// upstream resumes a session instead of a full handshake, and no connection
// carries a connector (and its cache) of its own.
import type { IncomingHttpHeaders } from 'node:http';
import type { Duplex } from 'node:stream';
import { buildConnector, Client, type Dispatcher } from 'undici';

export interface OriginOptions {
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  /** Concurrent calls to the origin; undefined for no cap. */
  connections: number | undefined;
}

/**
 * What a client is destroyed with when sluice no longer needs it. Given no
 * error, undici makes a ClientDestroyedError for each destroy, and node's
 * stream destroy formats its stack: 40-150 µs a client on the bench VM, paid
 * once per connection that ends (every call, where the upstream closes
 * connections). A dropped client carries no call, so nothing reports it.
 */
const RETIRED = new Error('sluice no longer needs this upstream connection');
const ignore = (): void => {};

/** How long an idle connection is kept for the next call when the upstream's keep-alive header gives no timeout. */
const KEEP_ALIVE_MS = 30_000;

interface Slot {
  readonly client: Client;
  /** Where the slot is in the idle stack; -1 while it carries a call. */
  idleAt: number;
  connected: boolean;
}

/**
 * The handler undici is given for one call: it passes every callback on to
 * the caller's handler, and frees the slot once the call has ended (the first
 * of onResponseEnd and onResponseError). Not on the client's 'drain' event,
 * which undici's Pool uses: 'drain' says the client could take another call,
 * and undici can emit it late. A call dropped while undici writes it (its
 * caller already gone) is followed by a queued 'drain', which lands after the
 * next call has taken the client: freed on that, the client was handed a
 * second call, or destroyed under one when its connection closed (one call in
 * eleven failed so with aborts among concurrent calls), and the count of
 * clients fell below zero, so close() never ended.
 */
class SlotCall implements Dispatcher.DispatchHandler {
  private ended = false;

  constructor(private readonly pool: OriginClients, private readonly slot: Slot, private readonly handler: Dispatcher.DispatchHandler) {}

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    this.handler.onRequestStart?.(controller, context);
  }

  onRequestUpgrade(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders, socket: Duplex): void {
    this.handler.onRequestUpgrade?.(controller, statusCode, headers, socket);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders, statusMessage?: string): void {
    this.handler.onResponseStart?.(controller, statusCode, headers, statusMessage);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.handler.onResponseData?.(controller, chunk);
  }

  onResponseEnd(controller: Dispatcher.DispatchController, trailers: IncomingHttpHeaders): void {
    try {
      this.handler.onResponseEnd?.(controller, trailers);
    } finally {
      this.end();
    }
  }

  onResponseError(controller: Dispatcher.DispatchController | null, error: Error): void {
    try {
      this.handler.onResponseError?.(controller as Dispatcher.DispatchController, error);
    } finally {
      this.end();
    }
  }

  /**
   * Frees the slot once undici is done with the call: these callbacks run inside its parser
   * and its write loop, where the next waiting call's dispatch would re-enter them.
   */
  private end(): void {
    if (this.ended) return;
    this.ended = true;
    queueMicrotask(() => this.pool.release(this.slot));
  }
}

interface Waiting { opts: Dispatcher.DispatchOptions; handler: Dispatcher.DispatchHandler }

export class OriginClients {
  private readonly idle: Slot[] = [];
  /** Calls past the cap, first come first served. */
  private readonly waiting: Waiting[] = [];
  private size = 0;
  /** Counted from the clients' connect and disconnect events. */
  private sockets = 0;
  private closing: Promise<void> | undefined;
  private onEmpty: (() => void) | undefined;

  private readonly connector: buildConnector.connector;

  constructor(private readonly origin: string, private readonly opts: OriginOptions) {
    this.connector = buildConnector({ timeout: opts.connectTimeoutMs });
  }

  /** Calls waiting for a connection under the cap. */
  get queued(): number { return this.waiting.length; }

  /** Connections open now. */
  get connected(): number { return this.sockets; }

  /** Clients held, busy or idle: at most one per call in flight, plus the idle connections kept alive. */
  get clients(): number { return this.size; }

  dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): void {
    const slot = this.idle.pop() ?? this.open();
    if (slot) this.run(slot, opts, handler);
    else this.waiting.push({ opts, handler });
  }

  private open(): Slot | undefined {
    if (this.opts.connections !== undefined && this.size >= this.opts.connections) return undefined;
    const client = new Client(this.origin, {
      connect: this.connector,
      headersTimeout: this.opts.headersTimeoutMs,
      bodyTimeout: this.opts.bodyTimeoutMs,
      keepAliveTimeout: KEEP_ALIVE_MS,
      pipelining: 1,
    });
    const slot: Slot = { client, idleAt: -1, connected: false };
    this.size++;
    client.on('connect', () => { slot.connected = true; this.sockets++; });
    client.on('disconnect', () => {
      if (slot.connected) { slot.connected = false; this.sockets--; }
      // The upstream (or the keep-alive timer) closed an idle connection: forget its client
      // rather than keep one per past burst of calls. A busy one is freed when its call fails.
      if (slot.idleAt >= 0) this.drop(slot);
    });
    return slot;
  }

  private run(slot: Slot, opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): void {
    slot.idleAt = -1;
    // A call the client refuses on the spot (an invalid header, say) is reported to its
    // SlotCall from inside dispatch, which frees the slot as any other ending does.
    slot.client.dispatch(opts, new SlotCall(this, slot, handler));
  }

  /** The slot's call has ended: the next waiting call takes the client, or it waits idle. */
  release(slot: Slot): void {
    const next = this.waiting.shift();
    if (next) return this.run(slot, next.opts, next.handler);
    // A call that failed with its connection (refused, cut, timed out) leaves a client with no
    // socket: opening a new one later costs the same, and keeping it costs memory.
    if (!slot.connected || this.closing) return this.drop(slot);
    slot.idleAt = this.idle.push(slot) - 1;
  }

  private drop(slot: Slot): void {
    if (slot.idleAt >= 0) {
      // Swap-remove: the stack's order is only a preference, and this keeps removal constant-time.
      const last = this.idle.pop()!;
      if (last !== slot) { this.idle[slot.idleAt] = last; last.idleAt = slot.idleAt; }
      slot.idleAt = -1;
    }
    this.size--;
    slot.client.destroy(RETIRED, ignore);
    if (this.size === 0) this.onEmpty?.();
  }

  /** Lets the calls in flight and those waiting finish, then closes every connection. */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((ok) => {
      this.onEmpty = ok;
      for (const slot of [...this.idle]) this.drop(slot);
      if (this.size === 0) ok();
    });
    return this.closing;
  }
}
