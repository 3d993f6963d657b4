// How a relayed stream ends its request. The exchange tells the relay (its
// BatchSink) that the stream is over; the relay then writes its ending (the
// usage, the trace fields, the stored response) and ends the request through
// ctx.end, since its handler returned HANDED_OFF rather than a promise held
// open for the stream's whole life.
import { GatewayError } from '../errors.js';
import type { RequestContext } from './request-context.js';

/**
 * `finish` runs only when the upstream ended and every batch went out; what
 * it throws or rejects with, like what a batch threw (`err`), becomes the
 * request's error. A stream that did not end so (the caller left, a block, an
 * upstream failure, or `finish` failed) runs `cut` with the error first, to
 * charge what the stream had cost. Never throws: the exchange calls this from
 * a microtask.
 */
export function endStream(ctx: RequestContext, ended: boolean, err: unknown, finish: () => void | Promise<void>, cut: (err: unknown) => void): void {
  const fail = (e: unknown): void => {
    try {
      cut(e);
    } catch {
      // The trace keeps the usage it had: the request still ends.
    }
    ctx.end(e);
  };
  if (err !== undefined || !ended) return fail(err);
  let finished: void | Promise<void>;
  try {
    finished = finish();
  } catch (e) {
    return fail(e);
  }
  if (finished) finished.then(() => ctx.end(), fail);
  else ctx.end();
}

/** A moderation block: the upstream made what was blocked, so it is charged even before the first byte (docs/limits.md). */
export const isBlock = (err: unknown): boolean => err instanceof GatewayError && err.code === 'content_blocked';
