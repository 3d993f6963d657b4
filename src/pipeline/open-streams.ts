// What a shutdown whose grace has run out must end: the streams under way,
// each with the SSE `error` event, and the calls still waiting on their
// upstream, each with a 503; both code `shutting_down`, and each request
// settles (its trace written) before the connections close. Until 2026-11-29
// their connections were dropped, which a client reads as a network failure,
// and the trace blamed the client (`client_closed`): streams until early that
// day, calls still waiting until late that day.
import { GatewayError } from '../errors.js';
import type { ClientSignal } from '../http/client-signal.js';
import type { RequestContext } from './request-context.js';

export class OpenStreams {
  /** A stream's cut, or the signal a call waits on its upstream through (no closure made per call). */
  private readonly cuts = new Map<RequestContext, (() => void) | ClientSignal>();

  /** A stream began: `cut` ends it (replacing the wait's signal, below). */
  add(ctx: RequestContext, cut: () => void): void {
    this.cuts.set(ctx, cut);
  }

  /** A call is waiting on its upstream through `signal`: a cut aborts it, and the request answers shutting_down. */
  waiting(ctx: RequestContext, signal: ClientSignal): void {
    this.cuts.set(ctx, signal);
  }

  /** The request is over, streamed or not. */
  settle(ctx: RequestContext): void {
    if (this.cuts.size > 0) this.cuts.delete(ctx);
  }

  /** Ends every stream still open and every call still waiting; returns how many. */
  cutAll(): number {
    const cuts = [...this.cuts.values()];
    for (const cut of cuts) {
      if (typeof cut === 'function') cut();
      else cut.abort(new GatewayError('shutting_down', 'The gateway is shutting down and its grace period ran out before the upstream answered.'));
    }
    return cuts.length;
  }
}
