// How much of one event-loop turn new requests may take. uWebSockets.js hands
// over every request that arrived since the last turn in one go, and each
// runs its setup (parse, authenticate, route, connect upstream) to its first
// real wait before the next begins: a wave of 250 arrivals took one loop turn
// of 100-120 ms on the bench VM, and every open stream's next chunk, every
// timer, waited behind it. Past the budget, new requests queue, and later
// turns start them, oldest first, each turn until it has spent the budget, so
// the chunks and timers of requests already under way get a turn in between.
// The work is the same; who waits for it changes.
//
// A request's setup runs on in promise reactions after its start returns. The
// runtime drains those after each front-end callback and after each
// immediate, so the clock, read at the next arrival or the next immediate,
// sees them. Queued requests therefore start from a batch of immediates
// queued together, which node runs in one pass of the next turn's check
// phase: each reads the clock after the last one's reactions. (Starting them
// in a loop inside one immediate would see only their synchronous part.) A
// turn is told by an immediate queued at its first request, which runs once
// the turn's I/O callbacks are done.

export type Clock = () => number;

export interface Scheduler {
  /** Queue `fn` for the check phase of this loop iteration (setImmediate). */
  later(fn: () => void): void;
}

const IMMEDIATE: Scheduler = { later: (fn) => { setImmediate(fn); } };

/**
 * Immediates queued for each turn that starts waiting requests: the most one
 * turn can start. Those a turn has no budget or no request for return at once
 * (about a microsecond each while the queue lasts). When setup costs 0.1 ms,
 * a 10 ms budget fits about a hundred; at 64 the queue still empties at
 * thousands of requests a second.
 */
export const STARTS_PER_TURN = 64;

export class TurnBudget {
  #turnStart = -1;
  /** Requests waiting for a later turn. */
  readonly #queue: Array<() => void> = [];
  /** A batch of starts is queued for the next check phase. */
  #batchQueued = false;
  /** The current batch has started a request in this turn. */
  #startedThisTurn = false;

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
    this.#queue.push(start);
    this.onDefer();
    if (!this.#batchQueued) this.#queueBatch();
  }

  #spent(): number {
    const now = this.now();
    if (this.#turnStart < 0) {
      this.#turnStart = now;
      this.scheduler.later(this.#turnOver);
    }
    return now - this.#turnStart;
  }

  /** A queued batch ends the turn itself, after its starts: this one may run before them. */
  readonly #turnOver = (): void => { if (!this.#batchQueued) this.#turnStart = -1; };

  #queueBatch(): void {
    this.#batchQueued = true;
    this.#startedThisTurn = false;
    for (let i = 0; i < STARTS_PER_TURN; i++) this.scheduler.later(this.#startNext);
    this.scheduler.later(this.#batchOver);
  }

  /**
   * Starts the longest-waiting request if this turn has budget left. The
   * first of a batch always starts one, so that arrivals which spent a
   * turn's budget cannot hold the queue back for ever.
   */
  readonly #startNext = (): void => {
    if (!this.#queue.length) return;
    // The turn began at the arrival that queued this batch, or at the last batch's end.
    if (this.#startedThisTurn && this.now() - this.#turnStart >= this.budgetMs) return;
    this.#startedThisTurn = true;
    this.#queue.shift()!();
  };

  /**
   * Ends the turn. While requests wait, the loop does not sleep (an immediate
   * is pending), so the next turn begins now: its I/O callbacks, among them
   * what earlier starts set going, count against the budget its batch sees.
   */
  readonly #batchOver = (): void => {
    this.#batchQueued = false;
    if (!this.#queue.length) {
      this.#turnStart = -1;
      return;
    }
    this.#turnStart = this.now();
    this.#queueBatch();
  };
}
