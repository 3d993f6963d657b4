// One upstream HTTP exchange driven through undici's handler API. The handler
// is a plain object the client calls back: no Readable stream and no promise
// per chunk, which in the request-based API cost more CPU than the gateway's
// own logic. A client that goes away aborts the exchange.
import { createParser, type EventSourceParser } from 'eventsource-parser';
import type { Dispatcher } from 'undici';
import type { ProviderAdapter, StreamEvent, UpstreamRequest } from '../domain.js';
import { GatewayError } from '../errors.js';
import type { ClientSignal } from '../http/client-signal.js';
import type { UpstreamPools } from './pools.js';
import { upstreamStatusError, upstreamTransportError } from './upstream-errors.js';

type Controller = Dispatcher.DispatchController;

class ClientGone extends Error {
  constructor() { super('The client closed the connection.'); this.name = 'ClientGone'; }
}

abstract class Exchange implements Dispatcher.DispatchHandler {
  protected controller: Controller | undefined;
  private errorBody: Buffer[] | undefined;
  private status = 0;
  private readonly onClientAbort = () => this.controller?.abort(new ClientGone());

  constructor(protected readonly adapter: ProviderAdapter, private readonly signal: ClientSignal) {
    signal.once('abort', this.onClientAbort);
  }

  start(pools: UpstreamPools, up: UpstreamRequest): void {
    pools.get(up.url.origin).dispatch({ path: up.url.path, method: up.method, headers: up.headers, body: up.body }, this);
  }

  onRequestStart(controller: Controller): void {
    this.controller = controller;
    if (this.signal.aborted) controller.abort(new ClientGone());
  }

  onResponseStart(_c: Controller, statusCode: number): void {
    this.status = statusCode;
    if (statusCode >= 400) this.errorBody = [];
    else this.accepted();
  }

  onResponseData(_c: Controller, chunk: Buffer): void {
    if (this.errorBody) this.errorBody.push(chunk);
    else this.data(chunk);
  }

  onResponseEnd(): void {
    this.signal.off('abort', this.onClientAbort);
    if (!this.errorBody) return this.end();
    const text = Buffer.concat(this.errorBody).toString('utf8');
    const ownKey = this.adapter.credentialRejected?.(this.status, text) ?? false;
    this.fail(upstreamStatusError(this.status, this.adapter.errorMessage(this.status, text), ownKey));
  }

  onResponseError(_c: Controller, err: Error): void {
    this.signal.off('abort', this.onClientAbort);
    this.fail(upstreamTransportError(err));
  }

  protected abstract accepted(): void;
  protected abstract data(chunk: Buffer): void;
  protected abstract end(): void;
  protected abstract fail(err: GatewayError): void;
}

/** A JSON answer, parsed once from the whole body. */
class JsonExchange extends Exchange {
  private parts: Buffer[] = [];
  resolve!: (v: unknown) => void;
  reject!: (e: unknown) => void;

  protected accepted(): void {}
  protected data(chunk: Buffer): void { this.parts.push(chunk); }
  protected end(): void {
    try {
      this.resolve(JSON.parse(Buffer.concat(this.parts).toString('utf8')));
    } catch (err) {
      this.reject(new GatewayError('upstream_error', 'The upstream returned a body that is not JSON.', { cause: err }));
    }
  }
  protected fail(err: GatewayError): void { this.reject(err); }
}

export function requestJson(pools: UpstreamPools, adapter: ProviderAdapter, up: UpstreamRequest, signal: ClientSignal): Promise<unknown> {
  const ex = new JsonExchange(adapter, signal);
  const p = new Promise<unknown>((ok, fail) => { ex.resolve = ok; ex.reject = fail; });
  ex.start(pools, up);
  return p;
}

/** Batches queued beyond this pause the upstream socket until the caller catches up. */
const HIGH_WATER = 16;

/**
 * An SSE answer as batches of normalised events, one batch per upstream read,
 * so the caller writes each with one syscall. A body that ends before the
 * provider signalled completion (a `done`, or a finish reason) ends with an
 * error event, so truncation never passes for a complete answer.
 */
class StreamExchange extends Exchange implements AsyncIterableIterator<StreamEvent[]> {
  private readonly parser: EventSourceParser;
  private readonly decoder = new TextDecoder();
  private readonly queue: StreamEvent[][] = [];
  private pending: StreamEvent[] = [];
  private finished = false;
  private closed = false;
  private wake: (() => void) | undefined;
  private isAccepted = false;
  ready!: { resolve: () => void; reject: (e: unknown) => void };

  constructor(adapter: ProviderAdapter, signal: ClientSignal) {
    super(adapter, signal);
    const translator = adapter.streamTranslator();
    this.parser = createParser({
      onEvent: (e) => {
        for (const ev of translator.event(e.event, e.data)) {
          if (ev.type === 'done') { this.finished = true; continue; }
          if (ev.type === 'delta' && ev.finish_reason) this.finished = true;
          this.pending.push(ev);
        }
      },
    });
  }

  protected accepted(): void {
    this.isAccepted = true;
    this.ready.resolve();
  }

  protected data(chunk: Buffer): void {
    this.parser.feed(this.decoder.decode(chunk, { stream: true }));
    if (!this.pending.length) return;
    this.push(this.pending);
    this.pending = [];
    if (this.queue.length > HIGH_WATER) this.controller?.pause();
  }

  protected end(): void {
    if (!this.finished) this.push([{ type: 'error', message: 'The upstream stream ended before it completed.' }]);
    this.close();
  }

  protected fail(err: GatewayError): void {
    if (!this.isAccepted) return this.ready.reject(err);
    this.push([{ type: 'error', message: err.message }]);
    this.close();
  }

  private push(batch: StreamEvent[]): void {
    this.queue.push(batch);
    this.wake?.();
  }

  private close(): void {
    this.closed = true;
    this.wake?.();
  }

  async next(): Promise<IteratorResult<StreamEvent[]>> {
    for (;;) {
      if (this.queue.length) {
        // Everything that arrived since the last call goes out as one batch: one
        // socket read often holds many chunked-encoding frames, each its own onResponseData.
        const batch = this.queue.length === 1 ? this.queue[0]! : this.queue.flat();
        this.queue.length = 0;
        if (this.controller?.paused) this.controller.resume();
        return { value: batch, done: false };
      }
      if (this.closed) return { value: undefined, done: true };
      await new Promise<void>((ok) => { this.wake = ok; });
      this.wake = undefined;
    }
  }

  /** The caller stopped early (a moderation block, a client gone): stop the upstream too. */
  async return(): Promise<IteratorResult<StreamEvent[]>> {
    if (!this.closed) this.controller?.abort(new ClientGone());
    this.closed = true;
    return { value: undefined, done: true };
  }

  [Symbol.asyncIterator](): this { return this; }
}

/** Resolves once the upstream accepted the call; an error status rejects before any byte reaches the caller. */
export async function requestStream(pools: UpstreamPools, adapter: ProviderAdapter, up: UpstreamRequest, signal: ClientSignal): Promise<AsyncIterableIterator<StreamEvent[]>> {
  const ex = new StreamExchange(adapter, signal);
  const ready = new Promise<void>((resolve, reject) => { ex.ready = { resolve, reject }; });
  ex.start(pools, up);
  await ready;
  return ex;
}
