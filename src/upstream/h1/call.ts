// One call on an upstream connection, and the handler API it is driven
// through: undici's (DispatchHandler and DispatchController), the part sluice
// uses, so the exchanges above the connection are the ones undici drove.
import type { AnswerHead } from './answer-head.js';

/** What a call can do to itself: undici's DispatchController, as the exchanges use it. */
export interface CallController {
  abort(reason: Error): void;
  pause(): void;
  resume(): void;
  readonly paused: boolean;
  readonly aborted: boolean;
}

/** undici's DispatchHandler, the part sluice uses. */
export interface CallHandler {
  onRequestStart?(controller: CallController, context: unknown): void;
  /** Unlike undici's, the headers are an AnswerHead: read by name or place, not an object of them all. */
  onResponseStart?(controller: CallController, statusCode: number, head: AnswerHead, statusMessage?: string): void;
  /**
   * Unlike undici's, `chunk` is a view of the thread's read buffer, valid only
   * until this returns: a handler that keeps bytes copies them.
   */
  onResponseData?(controller: CallController, chunk: Buffer): void;
  onResponseEnd?(controller: CallController, trailers: AnswerHead): void;
  onResponseError?(controller: CallController, error: Error): void;
}

export interface CallOptions {
  path: string;
  method: string;
  headers?: Readonly<Record<string, string>>;
  /** None for a GET. */
  body?: string | Buffer;
}

/** What a call asks of the connection it is on. */
export interface CallHost {
  fail(call: Call, err: Error): void;
  pauseReading(): void;
  resumeReading(): void;
}

export const enum Phase { Head, Body, Done }

/** One call on a connection: its handler, and the controller the handler is given. */
export class Call implements CallController {
  phase = Phase.Head;
  paused = false;
  aborted = false;
  /** The request went to the socket: failing the call now costs the connection. */
  written = false;
  /**
   * What to send again should the upstream drop the call unheard on a
   * kept-alive connection (H1Connection.droppedUnheard); undefined on a new
   * connection, for a call already sent twice, and from the answer's first
   * byte on, so that a stream does not hold its request for its whole life.
   */
  resend: CallOptions | undefined;

  constructor(readonly conn: CallHost, readonly handler: CallHandler, readonly method: string, resend?: CallOptions) {
    this.resend = resend;
  }

  abort(reason: Error): void {
    if (this.aborted || this.phase === Phase.Done) return;
    this.aborted = true;
    this.conn.fail(this, reason);
  }

  pause(): void {
    if (this.paused || this.phase === Phase.Done) return;
    this.paused = true;
    this.conn.pauseReading();
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    if (this.phase !== Phase.Done) this.conn.resumeReading();
  }
}
