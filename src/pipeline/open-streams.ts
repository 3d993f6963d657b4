// The streams under way, for a shutdown whose grace has run out: each ends
// with the SSE `error` event, code `shutting_down`, and its request settles
// (its trace written) before the connections close. Until 2026-11-29 their
// connections were dropped, which a client reads as a network failure, and
// the trace blamed the client (`client_closed`).
import type { RequestContext } from './request-context.js';

export class OpenStreams {
  private readonly cuts = new Map<RequestContext, () => void>();

  /** A stream began: `cut` ends it. */
  add(ctx: RequestContext, cut: () => void): void {
    this.cuts.set(ctx, cut);
  }

  /** The request is over, streamed or not. */
  settle(ctx: RequestContext): void {
    if (this.cuts.size > 0) this.cuts.delete(ctx);
  }

  /** Ends every stream still open; returns how many. */
  cutAll(): number {
    const cuts = [...this.cuts.values()];
    for (const cut of cuts) cut();
    return cuts.length;
  }
}
