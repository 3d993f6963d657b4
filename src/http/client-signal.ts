// Fires when the caller goes away, so that the upstream call is cancelled with
// it. Every request makes two (the response's and its deadline's) and hangs a
// listener or two on each: a bare list costs a third of an EventEmitter per
// once/off pair, and an EventEmitter a tenth of an AbortController (an EventTarget).

type Listener = () => void;

export class ClientSignal {
  aborted = false;
  private listeners: Listener[] | undefined;

  /** Calls `fn` once, when the signal aborts; a signal already aborted never calls it (check `aborted` first). */
  once(_event: 'abort', fn: Listener): void {
    if (this.aborted) return;
    (this.listeners ??= []).push(fn);
  }

  off(_event: 'abort', fn: Listener): void {
    const l = this.listeners;
    if (!l) return;
    const i = l.indexOf(fn);
    if (i >= 0) l.splice(i, 1);
  }

  /** Listeners run in the order they were added; one added while they run is not called. */
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const l = this.listeners;
    this.listeners = undefined;
    if (l) for (const fn of l) fn();
  }
}
