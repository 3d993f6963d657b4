// Collects a request body under a size cap. Shared by both servers so that the
// cap and the 413 behave identically on either.
import { GatewayError } from '../errors.js';

export class BodyCollector {
  private parts: Buffer[] = [];
  private size = 0;
  private settled = false;
  readonly promise: Promise<Buffer>;
  private resolve!: (b: Buffer) => void;
  private reject!: (e: unknown) => void;
  /** True once the cap was passed: the rest of the body is unread, so the connection must close after the reply. */
  overflowed = false;

  constructor(private readonly limit: number, declaredLength: number | undefined) {
    this.promise = new Promise<Buffer>((ok, fail) => { this.resolve = ok; this.reject = fail; });
    // A pipeline that fails before reading the body (bad key) must not leave an unhandled rejection behind.
    this.promise.catch(() => {});
    if (declaredLength !== undefined && declaredLength > limit) this.overflow();
  }

  /** Returns false once the body is over the cap, so the caller can stop feeding it. */
  push(chunk: Buffer, isLast: boolean): boolean {
    if (this.settled) return false;
    this.size += chunk.length;
    if (this.size > this.limit) { this.overflow(); return false; }
    if (chunk.length) this.parts.push(chunk);
    if (isLast) {
      this.settled = true;
      this.resolve(this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.size));
      this.parts = [];
    }
    return true;
  }

  fail(err: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.reject(err);
  }

  private overflow(): void {
    this.overflowed = true;
    this.parts = [];
    this.fail(new GatewayError('body_too_large', `The request body is larger than ${this.limit} bytes.`));
  }
}

export const EMPTY_BODY: Promise<Buffer> = Promise.resolve(Buffer.alloc(0));
