// How a relayed stream ends its request. The exchange tells the relay (its
// BatchSink) that the stream is over; the relay then writes its ending (the
// usage, the trace fields, the stored response) and ends the request through
// ctx.end, since its handler returned HANDED_OFF rather than a promise held
// open for the stream's whole life.
import type { RequestContext } from './request-context.js';

/**
 * `finish` runs only when the upstream ended and every batch went out; what
 * it throws or rejects with, like what a batch threw (`err`), becomes the
 * request's error. Otherwise (the caller left, a block, an upstream failure)
 * `cut` runs first, to charge what the stream had cost. Never throws: the
 * exchange calls this from a microtask.
 */
export function endStream(ctx: RequestContext, ended: boolean, err: unknown, finish: () => void | Promise<void>, cut: () => void): void {
  if (err !== undefined || !ended) {
    try {
      cut();
    } catch {
      // The trace keeps the usage it had: the request still ends.
    }
    return ctx.end(err);
  }
  let finished: void | Promise<void>;
  try {
    finished = finish();
  } catch (e) {
    return ctx.end(e);
  }
  if (finished) finished.then(() => ctx.end(), (e: unknown) => ctx.end(e));
  else ctx.end();
}
