// One upstream HTTP exchange driven through the connection's handler API
// (undici's, h1/connection.ts). The handler is a plain object the connection
// calls back: no Readable stream and no promise per chunk, which in undici's
// request-based API cost more CPU than the gateway's own logic. A client that
// goes away aborts the exchange.
import { createParser, type EventSourceParser } from 'eventsource-parser';
import { StringDecoder } from 'node:string_decoder';
import type { ChatChunk, PassHeaders, ProviderAdapter, StreamEvent, StreamTranslator, UpstreamRequest } from '../domain.js';
import { answerFault, GatewayError } from '../errors.js';
import type { ClientSignal } from '../http/client-signal.js';
import { STOP, type BatchSink, type SinkResult, type StreamBatches, type StreamOutcome } from './stream-batches.js';
import type { AnswerHead } from './h1/answer-head.js';
import type { CallController, CallHandler } from './origin-clients.js';
import type { ExchangeLimits, UpstreamPools } from './pools.js';
import { inBandFailure, upstreamStatusError, upstreamTransportError } from './upstream-errors.js';
import { Deadline } from './retry.js';

class ClientGone extends Error {
  constructor() { super('The client closed the connection.'); this.name = 'ClientGone'; }
}

/** A stream whose body ended, after its 200 head, before any event: a failed call, as a reset connection is (retryable). */
class EndedEmpty extends Error {
  constructor() { super('The upstream stream ended before its first event.'); this.name = 'EndedEmpty'; }
}

/**
 * An answer over a cap is cut off: the socket is aborted rather than drained,
 * since draining 100 MB to throw it away costs the same bandwidth and time as
 * reading it. The caller gets a 502 that says which cap.
 */
function overCap(what: string, limit: number): GatewayError {
  return new GatewayError('upstream_error', `The upstream ${what} is larger than ${limit} bytes (upstream.max_response_bytes); it was cut off.`);
}

abstract class Exchange implements CallHandler {
  protected controller: CallController | undefined;
  private errorBody: Buffer[] | undefined;
  private status = 0;
  /** Bytes of a body held in memory (a JSON answer or an error body); streams are consumed as they go. */
  private held = 0;
  private cut = false;
  protected readonly limits: ExchangeLimits;
  /** The upstream's rate-limit headers, in OpenAI's names, for the caller. */
  headers: PassHeaders = [];
  /** Set once the exchange failed: a failure reported early (the client gone before the call was handed over) is not reported twice. */
  private failed = false;
  /**
   * Before the call was handed a controller (it waits for a connection under
   * the cap) the exchange fails at once instead of waiting; onRequestStart
   * then aborts the call, which is how a deadline never waits on a busy pool.
   */
  private readonly onClientAbort = () => {
    if (this.controller) this.controller.abort(new ClientGone());
    else this.onResponseError(undefined, new ClientGone());
  };

  constructor(protected readonly adapter: ProviderAdapter, protected readonly signal: ClientSignal, pools: UpstreamPools) {
    this.limits = pools.limits;
    signal.once('abort', this.onClientAbort);
  }

  /** Aborts the upstream socket; the connection then reports `err` through onResponseError, so the exchange fails once, there. */
  protected cutOff(err: GatewayError): void {
    if (this.cut) return;
    this.cut = true;
    this.controller?.abort(err);
  }

  /** Whether the whole body is held in memory (JSON answers and error bodies), and so counts against the cap. */
  protected abstract get holdsBody(): boolean;

  start(pools: UpstreamPools, up: UpstreamRequest): void {
    pools.get(up.url.origin).dispatch({ path: up.url.path, method: up.method, headers: up.headers, body: up.body }, this);
  }

  onRequestStart(controller: CallController): void {
    this.controller = controller;
    if (this.signal.aborted) controller.abort(new ClientGone());
  }

  onResponseStart(_c: CallController, statusCode: number, head: AnswerHead): void {
    this.status = statusCode;
    this.headers = this.adapter.passHeaders(head);
    if (statusCode >= 400) this.errorBody = [];
    // A declared length over the cap is refused before a byte of the body is read.
    const declared = Number(head.get('content-length'));
    if ((this.errorBody || this.holdsBody) && declared > this.limits.maxResponseBytes) {
      return this.cutOff(overCap(this.errorBody ? 'error body' : 'answer', this.limits.maxResponseBytes));
    }
    if (!this.errorBody) this.accepted(declared);
  }

  protected get isCut(): boolean { return this.cut; }

  onResponseData(_c: CallController, chunk: Buffer): void {
    if (this.cut) return;
    if (this.errorBody || this.holdsBody) {
      this.held += chunk.length;
      if (this.held > this.limits.maxResponseBytes) return this.cutOff(overCap(this.errorBody ? 'error body' : 'answer', this.limits.maxResponseBytes));
    }
    // The chunk is the read buffer's (CallHandler.onResponseData): a body that is held is copied.
    if (this.errorBody) this.errorBody.push(Buffer.from(chunk));
    else this.data(chunk);
  }

  onResponseEnd(): void {
    this.signal.off('abort', this.onClientAbort);
    if (!this.errorBody) return this.end();
    const text = Buffer.concat(this.errorBody).toString('utf8');
    const ownKey = this.adapter.credentialRejected?.(this.status, text) ?? false;
    const fromBody = this.adapter.errorHeaders?.(this.status, text) ?? [];
    const headers = fromBody.length ? [...this.headers.filter(([k]) => !fromBody.some(([b]) => b === k)), ...fromBody] : this.headers;
    this.fail(upstreamStatusError(this.status, this.adapter.errorDetails(this.status, text), ownKey, headers));
  }

  onResponseError(_c: CallController | undefined, err: Error): void {
    this.signal.off('abort', this.onClientAbort);
    if (this.failed) return;
    this.failed = true;
    this.fail(upstreamTransportError(err));
  }

  /** The answer is a success; `declared` is its content-length (NaN without one), at most the cap. */
  protected abstract accepted(declared: number): void;
  /** `chunk` is valid only during the call (CallHandler.onResponseData). */
  protected abstract data(chunk: Buffer): void;
  protected abstract end(): void;
  protected abstract fail(err: GatewayError): void;
}

/** A JSON answer, parsed once from the whole body. */
class JsonExchange extends Exchange {
  /**
   * The body, copied out of the read buffer as it comes: into one buffer of
   * the declared length (an answer of many reads, an embeddings batch, is
   * copied once, not once per read and again to join them), else read by read.
   */
  private whole: Buffer | undefined;
  private filled = 0;
  private parts: Buffer[] = [];
  parse: ((text: string, bytes: Buffer) => unknown) | undefined;
  /** The whole body's text, once it has ended. */
  text = '';
  protected get holdsBody(): boolean { return true; }
  resolve!: (v: unknown) => void;
  reject!: (e: unknown) => void;

  protected accepted(declared: number): void {
    // llhttp holds a body to its content-length, and the cap bounds that length.
    if (declared > 0) this.whole = Buffer.allocUnsafe(declared);
  }
  protected data(chunk: Buffer): void {
    if (this.whole) this.filled += chunk.copy(this.whole, this.filled);
    else this.parts.push(Buffer.from(chunk));
  }
  protected end(): void {
    try {
      const bytes = this.whole ? this.whole.subarray(0, this.filled) : this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts);
      this.whole = undefined;
      this.parts = [];
      this.text = bytes.toString('utf8');
      this.resolve(this.parse ? this.parse(this.text, bytes) : JSON.parse(this.text));
    } catch (err) {
      this.reject(err instanceof GatewayError ? err : new GatewayError('upstream_error', 'The upstream returned a body that is not JSON.', { cause: err }));
    }
  }
  protected fail(err: GatewayError): void {
    this.whole = undefined;
    this.parts = [];
    this.reject(err);
  }
}

/** `text` is the body as the upstream wrote it, which `body` was parsed from. */
export interface JsonAnswer { body: unknown; text: string; headers: PassHeaders }

/** `parse` turns the whole body's text (and its bytes) into the answer: JSON.parse unless the caller has a cheaper reading. */
export function requestJson(
  pools: UpstreamPools, adapter: ProviderAdapter, up: UpstreamRequest, signal: ClientSignal, parse?: (text: string, bytes: Buffer) => unknown,
): Promise<JsonAnswer> {
  const ex = new JsonExchange(adapter, signal, pools);
  ex.parse = parse;
  const p = new Promise<unknown>((ok, fail) => { ex.resolve = ok; ex.reject = fail; });
  ex.start(pools, up);
  return p.then((body) => ({ body, text: ex.text, headers: ex.headers }));
}

function hasFinish(choices: ReadonlyArray<{ finish_reason?: unknown }> | undefined): boolean {
  if (!choices) return false;
  for (const c of choices) if (c.finish_reason) return true;
  return false;
}

/**
 * An event that says nothing yet: a chunk with a role and no text, finish or usage (OpenAI's
 * first chunk, Anthropic's message_start), or a Responses stream's created and in-progress events.
 */
function opening(ev: StreamEvent): boolean {
  if (ev.type === 'event') return ev.name === 'response.created' || ev.name === 'response.in_progress';
  if (ev.type !== 'chunk' || ev.plain || ev.chunk.usage) return false;
  for (const c of ev.chunk.choices) {
    if (c.finish_reason) return false;
    for (const k in c.delta) if (k !== 'role' && c.delta[k] !== '' && c.delta[k] != null) return false;
  }
  return true;
}

/** A stream's `ready` once settled. */
const SETTLED = { resolve() {}, reject() {} };

/**
 * Upstream bytes queued beyond this (about one socket read) pause the upstream
 * socket until the caller catches up. Bytes, not batches, so that a burst of
 * small chunks in one read reaches the caller whole, to leave in one write.
 */
const HIGH_WATER_BYTES = 64 * 1024;

/**
 * An SSE answer as batches of normalised events, one batch per upstream read,
 * pushed to the relay (its BatchSink) so that it writes each with one syscall.
 * A body that ends before the provider signalled completion (its translator's
 * `done`) ends with an error event, so truncation never passes for a complete
 * answer.
 *
 * The call counts as answered at its first event, not its 200 head: until
 * then nothing can have reached the caller, so a body that fails or ends
 * before it, or whose first event is the provider's own error (Anthropic's
 * `overloaded_error`), fails the call, and retries and fallbacks take it
 * over. The first event is not waited for beyond its own read.
 */
class StreamExchange extends Exchange implements StreamBatches {
  private readonly parser: EventSourceParser;
  private readonly translator: StreamTranslator;
  private flushed = false;
  /**
   * Holds a character split between two reads until its last byte arrives.
   * StringDecoder, not TextDecoder: a third of the cost per read, but it
   * keeps a leading BOM, which SSE drops (data()).
   * Made only once a read ends inside a character: SSE reads end with a line's
   * end, and a decoder (its Buffer and that Buffer's native store) was 0.3 KB
   * held by every open stream.
   */
  private decoder: StringDecoder | undefined;
  private atStart = true;
  /**
   * Events not yet delivered, in one flat array: one array per chunked frame, then
   * flattened, cost an allocation per frame (every chunk is a frame).
   */
  private queue: StreamEvent[] = [];
  /** Upstream bytes read since the sink last took the queue. */
  private queuedBytes = 0;
  private finished = false;
  private closed = false;
  /** The first event came and was not an error: the call is answered (`ready` resolved). */
  private committed = false;
  /** The relay being fed; cleared once the stream is over for it. */
  private sink: BatchSink | undefined;
  /** A delivery is queued, or the sink has not yet settled the last batch: what arrives meanwhile waits in the queue. */
  private delivering = false;
  ready!: { resolve: (o: StreamOutcome) => void; reject: (e: unknown) => void };

  protected get holdsBody(): boolean { return false; }

  /** With n > 1, the choice indexes whose finish reason came: a stream without a terminator is whole once all n have. */
  private finishedChoices: Set<unknown> | undefined;

  constructor(adapter: ProviderAdapter, signal: ClientSignal, pools: UpstreamPools, private sent: string, private readonly choices: number) {
    super(adapter, signal, pools);
    const translator = this.translator = adapter.streamTranslator();
    const maxEvent = this.limits.maxEventBytes;
    this.parser = createParser({
      // A stream may run for hours, but one event (or one unterminated line) must fit this:
      // the parser is the only place a stream's bytes pile up.
      maxBufferSize: maxEvent,
      onError: (e) => {
        if (e.type === 'max-buffer-size-exceeded') {
          this.cutOff(new GatewayError('upstream_error', `The upstream sent a stream event or line longer than ${maxEvent} characters (upstream.max_event_bytes); the stream was cut off.`));
        }
      },
      onEvent: (e) => {
        let events;
        try {
          events = translator.event(e.event, e.data);
        } catch (err) {
          // An event nested too deep to read is the upstream's fault (a 502), not the caller's.
          const fault = answerFault(err);
          if (fault === err) throw err;
          return this.cutOff(fault as GatewayError);
        }
        this.take(events);
      },
    });
  }

  /** What the translator holds for the body's end (StreamTranslator.end), taken once. */
  private flush(): void {
    if (this.flushed || !this.translator.end) return;
    this.flushed = true;
    this.take(this.translator.end());
  }

  private take(events: StreamEvent[]): void {
    for (const ev of events) {
      if (ev.type === 'done') { this.finished = true; continue; }
      // A finish reason also counts as completion: some OpenAI-compatible servers end without [DONE].
      if (ev.type === 'chunk' && !this.finished && (ev.plain ? ev.finishes === true : hasFinish(ev.chunk.choices))) this.countFinish(ev);
      this.queue.push(ev);
    }
  }

  /**
   * With n > 1, every choice's finish: a body that ends after choice 0's cut choice 1 short.
   * Counted by index, as a finish may come again (on a usage chunk) or several in one chunk;
   * reading the choices parses a plain chunk, which only a finishing chunk of such a stream pays.
   */
  private countFinish(ev: { readonly chunk: ChatChunk }): void {
    if (this.choices <= 1) { this.finished = true; return; }
    const done = this.finishedChoices ??= new Set();
    for (const c of ev.chunk.choices) if (c.finish_reason) done.add(c.index);
    if (done.size >= this.choices) this.finished = true;
  }

  /**
   * The 200 head: the call is answered only with its first event (commit), but the request's
   * deadline stops here, as it did until 2026-11-29: a reasoning model may send its first token
   * minutes after its head (OpenRouter sends comments meanwhile), and the silence is bounded by
   * upstream.body_timeout_ms. A failure before the first event is still retried while the
   * deadline has time left (withRetry reads Deadline.left()).
   */
  protected accepted(): void {
    if (this.signal instanceof Deadline) this.signal.done();
  }

  /**
   * Before the call is answered: the failure its first events stand for, when an error comes
   * before anything but an opening (Anthropic's message_start then its overloaded_error, in one
   * read). Only what one read brought is looked at: the first event is not held for the next.
   */
  private firstFailure(): GatewayError | undefined {
    for (const ev of this.queue) {
      // With the 200 head's rate-limit headers: a 429 passed through tells the caller's SDK what it would have.
      if (ev.type === 'error') return inBandFailure(ev.message, ev.upstream, this.headers);
      if (ev.type === 'event' && ev.upstream) return inBandFailure(ev.upstream.details.message, ev.upstream, this.headers);
      if (!opening(ev)) return undefined;
    }
    return undefined;
  }

  /** The call is answered: the relay may take the stream. */
  private commit(): void {
    this.committed = true;
    const { sent } = this;
    this.sent = '';
    this.ready.resolve({ events: this, sent, headers: this.headers });
    // Settled once: its resolvers would otherwise stay for as long as the stream runs.
    this.ready = SETTLED;
  }

  protected data(chunk: Buffer): void {
    this.queuedBytes += chunk.length;
    let text = this.decode(chunk);
    if (this.atStart && text.length > 0) {
      this.atStart = false;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    const before = this.queue.length;
    this.parser.feed(text);
    // The parser refused the chunk (over the event cap) and is terminated: nothing more is fed to it.
    // What this read parsed before the cap would reach the sink after the failure the cut
    // queued during the feed, so it is dropped and only the failure stays.
    if (this.isCut) {
      this.queue = this.queue.filter((ev, i) => i < before || ev.type === 'error');
      return;
    }
    if (this.queue.length === before) return;
    if (!this.committed) {
      // Cut off, the connection reports the failure through fail(), which fails the call.
      const failure = this.firstFailure();
      if (failure) return this.cutOff(failure);
      this.commit();
    }
    this.schedule();
    if (this.queuedBytes > HIGH_WATER_BYTES) this.controller?.pause();
  }

  private decode(chunk: Buffer): string {
    if (this.decoder) return this.decoder.write(chunk);
    // A last byte under 0x80 is a whole (ASCII) character: the read splits none.
    if (chunk.length === 0 || chunk[chunk.length - 1]! < 0x80) return chunk.toString('utf8');
    this.decoder = new StringDecoder('utf8');
    return this.decoder.write(chunk);
  }

  protected end(): void {
    // A translator that holds the stream's last chunks (Gemini's usage) lets them go only now.
    this.flush();
    // Nothing came (a failed call), or only [DONE] (an empty answer).
    if (!this.committed) {
      const failure = this.firstFailure() ?? (this.finished ? undefined : upstreamTransportError(new EndedEmpty()));
      if (failure) return this.fail(failure);
      this.commit();
    }
    if (!this.finished) this.push({ type: 'error', message: 'The upstream stream ended before it completed.' });
    this.close();
  }

  protected fail(err: GatewayError): void {
    if (!this.committed) {
      this.ready.reject(err);
      this.ready = SETTLED;
      return;
    }
    // The caller left and the call went with it: the stream just ends, so the pipeline records
    // client_closed; an error event would blame the provider, and nobody is left to read it.
    if (!this.signal.aborted) {
      // A Gemini body that stalls after every finish (until upstream.body_timeout_ms) is whole but for
      // its end: the usage it reported goes out before the error, so the call is charged that, not an estimate.
      this.flush();
      this.push({ type: 'error', message: err.message });
    }
    this.close();
  }

  private push(ev: StreamEvent): void {
    this.queue.push(ev);
    this.schedule();
  }

  private close(): void {
    this.closed = true;
    this.schedule();
  }

  pump(sink: BatchSink): void {
    this.sink = sink;
    this.schedule();
  }

  /**
   * Delivery waits for a microtask: one socket read often holds the body's
   * last bytes and its end (the client hands a read's body on in one piece,
   * then the end), and both run before it, so they reach the sink as one
   * batch, and the sink knows whether it is the last.
   */
  private schedule(): void {
    if (!this.sink || this.delivering || (this.queue.length === 0 && !this.closed)) return;
    this.delivering = true;
    queueMicrotask(this.deliver);
  }

  private readonly deliver = (): void => {
    this.delivering = false;
    const { sink } = this;
    if (!sink) return;
    if (this.queue.length === 0) return void (this.closed && this.settle(true));
    const batch = this.queue;
    this.queue = [];
    this.queuedBytes = 0;
    if (this.controller?.paused) this.controller.resume();
    const last = this.closed;
    let result: SinkResult;
    try {
      result = sink.batch(batch, last);
    } catch (err) {
      return this.settle(false, err);
    }
    if (result === STOP) return this.settle(false);
    if (result) {
      this.delivering = true;
      result.then((r) => (r === STOP ? this.settle(false) : this.deliver()), (err: unknown) => this.settle(false, err));
    } else if (last) {
      this.settle(true);
    }
  };

  /** The stream is over for the sink: ended, or stopped early by it (the upstream is then cut). */
  private settle(ended: boolean, err?: unknown): void {
    const sink = this.sink!;
    this.sink = undefined;
    if (!ended && !this.closed) {
      this.closed = true;
      this.controller?.abort(new ClientGone());
    }
    sink.done(ended, err);
  }
}

/**
 * Resolves once the upstream answered with its first event; an error status,
 * or a body that ends, fails or errs before it, rejects. `sent` is the body sent, carried to the outcome
 * for the payload archive; `choices` the request's `n`. Not async, and the exchange resolves with the
 * outcome itself: a stream waits for acceptance with this one promise, where
 * an async frame and a promise to reshape its result were two more, and under
 * a burst of arriving streams all of it lived long enough to be promoted.
 */
export function requestStream(pools: UpstreamPools, adapter: ProviderAdapter, up: UpstreamRequest, signal: ClientSignal, sent: string, choices = 1): Promise<StreamOutcome> {
  const ex = new StreamExchange(adapter, signal, pools, sent, choices);
  const ready = new Promise<StreamOutcome>((resolve, reject) => { ex.ready = { resolve, reject }; });
  ex.start(pools, up);
  return ready;
}
