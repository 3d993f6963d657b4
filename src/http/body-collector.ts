// Collects a request body under a size cap. Shared by both servers so that the
// cap and the 413 behave identically on either.
import { GatewayError } from '../errors.js';

type Outcome = { body: Buffer } | { error: unknown };

export class BodyCollector {
  private parts: Buffer[] = [];
  private size = 0;
  /**
   * The body, or why there is none, until it is taken. Not a promise made at
   * accept: a settled promise holds its value for as long as anything holds
   * it, and the server's listeners hold this collector until the response
   * ends, which for a stream is minutes after the body was last needed.
   */
  private outcome: Outcome | undefined;
  private taken = false;
  private waiter: { ok: (b: Buffer) => void; fail: (e: unknown) => void } | undefined;
  /** True once the cap was passed: the rest of the body is unread, so the connection must close after the reply. */
  overflowed = false;

  constructor(private readonly limit: number, declaredLength: number | undefined) {
    if (declaredLength !== undefined && declaredLength > limit) this.overflow();
  }

  /** The whole body, once; the collector keeps no reference to it after handing it over. */
  take(): Promise<Buffer> {
    if (this.taken) return Promise.reject(new GatewayError('gateway_error', 'The request body was read twice.'));
    this.taken = true;
    const o = this.outcome;
    this.outcome = undefined;
    if (o) return 'body' in o ? Promise.resolve(o.body) : Promise.reject(o.error);
    return new Promise<Buffer>((ok, fail) => { this.waiter = { ok, fail }; });
  }

  /** The body is whole or failed: held for the taker, or already handed over. */
  private get settled(): boolean {
    return this.outcome !== undefined || (this.taken && this.waiter === undefined);
  }

  /** Returns false once the body is over the cap, so the caller can stop feeding it. */
  push(chunk: Buffer, isLast: boolean): boolean {
    if (this.settled) return false;
    this.size += chunk.length;
    if (this.size > this.limit) { this.overflow(); return false; }
    if (chunk.length) this.parts.push(chunk);
    if (isLast) {
      const body = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.size);
      this.parts = [];
      this.settle({ body });
    }
    return true;
  }

  fail(err: unknown): void {
    if (this.settled) return;
    this.parts = [];
    this.settle({ error: err });
  }

  private settle(o: Outcome): void {
    const w = this.waiter;
    if (!w) { this.outcome = o; return; }
    this.waiter = undefined;
    if ('body' in o) w.ok(o.body); else w.fail(o.error);
  }

  private overflow(): void {
    this.overflowed = true;
    this.fail(new GatewayError('body_too_large', `The request body is larger than ${this.limit} bytes.`));
  }
}

/**
 * Why a body never came whole: the client left while sending it. The reply cannot reach
 * it, so this only ends the request (traced 499 `client_closed`) instead of leaving the
 * read waiting, and shutdown waiting on it, for ever.
 */
export const clientLeft = (): GatewayError => new GatewayError('invalid_request', 'The request body did not arrive whole: the client closed the connection, or sent it malformed.');

export const EMPTY_BODY = (): Promise<Buffer> => Promise.resolve(Buffer.alloc(0));
