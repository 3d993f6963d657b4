// Fires when the caller goes away, so that the upstream call is cancelled with
// it. Every request makes two (the response's and its deadline's) and hangs a
// listener or two on each: a bare list costs a third of an EventEmitter per
// once/off pair, and an EventEmitter a tenth of an AbortController (an EventTarget).

type Listener = () => void;

export class ClientSignal {
  aborted = false;
  /** Why, when it was not the caller leaving: the error the request then answers with (a shutdown's). */
  reason: Error | undefined = undefined;
  /** One listener as itself, more in an array: an array grown by a push has room for 17 (0.15 KB), and a request holds two signals for its whole life. */
  private listeners: Listener | Listener[] | undefined;

  /** Calls `fn` once, when the signal aborts; a signal already aborted never calls it (check `aborted` first). */
  once(_event: 'abort', fn: Listener): void {
    if (this.aborted) return;
    const l = this.listeners;
    if (l === undefined) this.listeners = fn;
    else if (typeof l === 'function') this.listeners = [l, fn];
    else l.push(fn);
  }

  off(_event: 'abort', fn: Listener): void {
    const l = this.listeners;
    if (l === fn) { this.listeners = undefined; return; }
    if (l === undefined || typeof l === 'function') return;
    const i = l.indexOf(fn);
    if (i >= 0) l.splice(i, 1);
  }

  /** Listeners run in the order they were added; one added while they run is not called. */
  abort(reason?: Error): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const l = this.listeners;
    this.listeners = undefined;
    if (typeof l === 'function') l();
    else if (l) for (const fn of l) fn();
  }
}
