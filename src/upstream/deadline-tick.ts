// Upstream deadlines on one coarse tick, as undici keeps its own: those of the
// connections (connect, answer headers, the gap between body reads, keep-alive
// idling; h1/connection.ts), and a request's own deadline of a second or more
// (retry.ts).
// A timer per connection re-armed on every read would cost a timer-list update
// per chunk of every stream; here a read only stores a number, and the tick
// looks over the connections that have a deadline. A deadline is kept to
// within TICK_MS, which is fine for timeouts measured in seconds.

/**
 * Something with a deadline (ms since the epoch; Infinity for none). `expired`
 * runs once it has passed, with the deadline reset to Infinity first.
 */
export interface Timed {
  deadline: number;
  expired(now: number): void;
}

export const TICK_MS = 100;

const watched = new Set<Timed>();
let timer: NodeJS.Timeout | undefined;

function tick(): void {
  const now = Date.now();
  for (const t of watched) {
    if (t.deadline <= now) {
      t.deadline = Infinity;
      t.expired(now);
    }
  }
  if (watched.size === 0 && timer) {
    clearInterval(timer);
    timer = undefined;
  }
}

/**
 * Watches `t` until unwatch(t). A connection is watched for its whole life, so
 * that a call changes only a number: no set or timer-list update per call.
 */
export function watch(t: Timed): void {
  watched.add(t);
  // Unref'd: a deadline never keeps the process alive by itself.
  timer ??= setInterval(tick, TICK_MS).unref();
}

export function unwatch(t: Timed): void {
  watched.delete(t);
}
