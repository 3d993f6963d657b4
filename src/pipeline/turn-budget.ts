// How much of one event-loop turn new requests may take. uWebSockets.js hands
// over every request that arrived since the last turn in one go, and each
// runs its setup (parse, authenticate, route, connect upstream) to its first
// real wait before the next begins: a wave of 250 arrivals took one loop turn
// of 100-120 ms on the bench VM, and every open stream's next chunk, every
// timer, waited behind it. Past the budget, new requests queue and start one
// per later turn, so the chunks and timers of requests already under way get
// a turn in between. One per turn, because a request's setup runs on in
// microtasks after its start returns, where no clock here can see it: the
// runtime drains them after each immediate, before the next turn. The work is
// the same; who waits for it changes. A turn is told by an immediate queued
// at its first request, which runs once the turn's I/O callbacks are done.

export type Clock = () => number;

export interface Scheduler {
  /** Queue `fn` for the check phase of this loop iteration (setImmediate). */
  later(fn: () => void): void;
}

const IMMEDIATE: Scheduler = { later: (fn) => { setImmediate(fn); } };

export class TurnBudget {
  #turnStart = -1;
  /** Requests waiting for a later turn; a drain is scheduled whenever it is not empty. */
  readonly #queue: Array<() => void> = [];

  constructor(
    readonly budgetMs: number,
    /** Called for each request that has to wait for a later turn. */
    readonly onDefer: () => void = () => {},
    readonly now: Clock = () => performance.now(),
    readonly scheduler: Scheduler = IMMEDIATE,
  ) {}

  /** Requests waiting for a later turn. */
  get waiting(): number { return this.#queue.length; }

  /** Runs `start` now, or in a later turn if this one has spent its budget (in arrival order either way). */
  run(start: () => void): void {
    if (!this.#queue.length && this.#spent() < this.budgetMs) {
      start();
      return;
    }
    if (this.#queue.push(start) === 1) this.scheduler.later(this.#drain);
    this.onDefer();
  }

  #spent(): number {
    const now = this.now();
    if (this.#turnStart < 0) {
      this.#turnStart = now;
      this.scheduler.later(this.#turnOver);
    }
    return now - this.#turnStart;
  }

  readonly #turnOver = (): void => { this.#turnStart = -1; };

  /** Starts the longest-waiting request, and leaves the rest to the turns after. */
  readonly #drain = (): void => {
    const start = this.#queue.shift()!;
    if (this.#queue.length) this.scheduler.later(this.#drain);
    start();
  };
}
