// The output side of a stream (chat completions and Responses): lines of one
// upstream read are collected and written at once, with backpressure; status
// and headers go out with the first write, so a failure before it is still a
// JSON error. Keeps the trace's stream fields (streamed, ttfb_ms,
// stream_aborted, disclosed_bytes) exact.
import type { PassHeaders } from '../domain.js';
import { sseErrorEvent } from '../errors.js';
import type { GatewayResponse, HeaderList } from '../http/types.js';
import type { OpenStreams } from './open-streams.js';
import type { RequestContext } from './request-context.js';
import { STOP, type SinkResult } from '../upstream/stream-batches.js';

const SSE_HEADERS: HeaderList = [
  ['content-type', 'text/event-stream; charset=utf-8'],
  ['cache-control', 'no-cache'],
  // Reverse proxies such as nginx would otherwise buffer the stream and destroy TTFB.
  ['x-accel-buffering', 'no'],
];

export class SseOut {
  private pending = '';
  /** UTF-8 bytes of model output sent (or going out with `pending`). */
  private disclosed = 0;
  /** The response has ended: what comes after is not written, and a relay that goes on stops at its next batch (a shutdown's cut). */
  private closed = false;

  constructor(
    private readonly res: GatewayResponse, private readonly ctx: RequestContext, private readonly passHeaders: PassHeaders,
    private readonly streams: OpenStreams,
  ) {}

  get hasOutput(): boolean { return this.disclosed > 0; }
  /** UTF-8 bytes of model output sent, or going out with what is pending. */
  get outputBytes(): number { return this.disclosed; }
  get started(): boolean { return this.res.started || this.pending !== ''; }

  add(text: string, outputBytes = 0): void {
    this.pending += text;
    this.disclosed += outputBytes;
  }

  private begin(): void {
    if (this.res.started) return;
    this.res.beginStream(200, [...SSE_HEADERS, ['x-request-id', this.ctx.requestId], ...this.passHeaders]);
    this.ctx.trace.status_code = 200;
    // Streamed is what the caller got, not what it asked for: a stream request answered with a JSON error is not one.
    this.ctx.trace.streamed = true;
    this.ctx.trace.ttfb_ms = Math.round(this.ctx.elapsedMs() * 1000) / 1000;
    this.streams.add(this.ctx, () => this.shutDown());
  }

  private shutDown(): void {
    if (this.closed || this.res.aborted) return;
    this.abort('shutting_down', sseErrorEvent('shutting_down', 'The gateway is shutting down; this stream was cut at the end of its grace period.', this.ctx.requestId));
    // The upstream call goes too, as if the caller had left: the relay may be waiting on its next read.
    this.res.signal.abort();
  }

  /**
   * A relay's batch is done: what it added goes out, unless `hold` (a last
   * batch leaves with the stream's end, one write instead of two); then STOP
   * if the caller has gone. A promise only while the socket is backpressured.
   */
  endBatch(hold: boolean): SinkResult {
    const wait = hold ? undefined : this.flush();
    return wait ? wait.then(() => this.callerGone()) : this.callerGone();
  }

  private callerGone(): typeof STOP | undefined {
    if (this.closed) return STOP;
    if (!this.res.aborted) return undefined;
    this.clientLeft();
    return STOP;
  }

  private flush(): Promise<void> | undefined {
    if (!this.pending || this.closed) return undefined;
    this.begin();
    const wait = this.res.write(this.pending);
    this.pending = '';
    return wait;
  }

  end(last = ''): void {
    if (this.closed) return;
    this.closed = true;
    this.begin();
    this.res.endStream(this.pending + last);
    this.pending = '';
  }

  /** Ends a stream cut short with `last` (the failure events). */
  abort(code: string, last: string): void {
    if (this.closed) return;
    this.ctx.trace.stream_aborted = true;
    this.ctx.trace.error_code = code;
    this.ctx.trace.disclosed_bytes = this.disclosed;
    this.end(last);
  }

  clientLeft(): void {
    this.ctx.trace.stream_aborted = true;
    this.ctx.trace.error_code = 'client_closed';
    this.ctx.trace.disclosed_bytes = this.disclosed;
  }
}
