// Retries before the first byte. A call is retried on a connect error, a
// timeout, or a 429/500/502/503/504, with exponential backoff and full jitter
// (a uniform wait in [0, min(max, base * 2^n)]), so that many gateways retrying
// one sick upstream spread out instead of arriving together. An upstream's
// retry-after (or retry-after-ms) is a floor on the wait. The deadline is the
// request's, over all its attempts, waits and fallbacks (see Deadline): no wait
// is started that would end past it, an attempt still running when it passes
// is cut short, and a caller that leaves cancels the wait. Streams are retried
// only until the upstream answered the call with its first event (`chatStream`
// resolved; exchange.ts): this wraps that promise, never the events after it.
import type { RetryPolicy } from '../config/resilience-schema.js';
import { GatewayError } from '../errors.js';
import { ClientSignal } from '../http/client-signal.js';
import { TICK_MS, unwatch, watch, type Timed } from './deadline-tick.js';

/** HTTP statuses of an upstream answer worth another try. */
/** 529 is Anthropic's overloaded_error, over HTTP or in a stream's first event (in-band-error.ts). */
const RETRY_STATUSES = new Set([429, 500, 502, 503, 504, 529]);

/** True when the failure is the upstream's (or the network's) and another try may succeed. */
export function isRetryable(err: unknown): boolean {
  if (!(err instanceof GatewayError)) return false;
  if (err.code === 'upstream_timeout') return true;
  if (err.code !== 'upstream_error') return false;
  if (err.upstreamStatus !== undefined) return RETRY_STATUSES.has(err.upstreamStatus);
  // No status: a transport failure (refused, reset) carries the network error as its cause;
  // a malformed body (a SyntaxError, or no cause), or a request head the client refused to
  // send (InvalidRequestError), would fail the same way again.
  const cause = err.cause as { name?: string } | undefined;
  return cause instanceof Error && cause.name !== 'SyntaxError' && cause.name !== 'ClientGone' && cause.name !== 'InvalidRequestError';
}

/** The wait an upstream asked for, in ms, from retry-after-ms or retry-after (seconds or an HTTP date). */
export function retryAfterMs(err: unknown, now = Date.now()): number | undefined {
  if (!(err instanceof GatewayError)) return undefined;
  let secs: string | undefined;
  for (const [k, v] of err.headers) {
    if (k === 'retry-after-ms') { const ms = Number(v); if (Number.isFinite(ms) && ms >= 0) return ms; }
    if (k === 'retry-after') secs = v;
  }
  if (secs === undefined) return undefined;
  const n = Number(secs);
  if (Number.isFinite(n) && n >= 0) return n * 1000;
  const at = Date.parse(secs);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Full jitter: uniform in [0, min(max, base * 2^retry)]. `retry` counts from 0. */
export function backoffMs(p: RetryPolicy, retry: number, random = Math.random): number {
  return random() * Math.min(p.max_delay_ms, p.base_delay_ms * 2 ** retry);
}

/** Resolves true after `ms`, or false as soon as the caller leaves. */
export function pause(ms: number, signal: ClientSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((ok) => {
    const onAbort = () => { clearTimeout(t); ok(false); };
    const t = setTimeout(() => { signal.off('abort', onAbort); ok(true); }, ms);
    signal.once('abort', onAbort);
  });
}

/**
 * One request's deadline, shared by every attempt, retry wait and fallback of
 * its upstream call. It is itself the signal those attempts listen to: it
 * fires when the caller leaves, or when the deadline passes, which cuts short
 * an attempt still running (an exchange not yet on a socket fails at once, so
 * nothing waits for a pool slot past the deadline). `done()` stops the clock
 * once an upstream answered the call, or it failed for good; a stream stops it
 * at its 200 head (exchange.ts), and arm() starts it again for what is left
 * should that stream fail before its first event and be retried. An answered
 * stream still ends when the caller leaves, through the same signal.
 * No promise races the attempt: the abort is how the deadline arrives, which
 * keeps a request that never reaches its deadline at one timer and no extra
 * promises.
 */
export class Deadline extends ClientSignal {
  expired = false;
  private readonly at: number;
  /**
   * Dropped once done: an accepted stream keeps its deadline (the signal it ends by) for its whole life, not its spent timer.
   * A deadline of a second or more is watched by the upstream deadline tick (within 0.1 s of it): made and
   * dropped, a Deadline with a timer of its own cost 0.53 µs, and with a tick entry 0.38; a timer also runs
   * node's timer-list code on every request's way in. A shorter one keeps a timer of its own.
   */
  private timer: NodeJS.Timeout | undefined;
  private timed: Timed | undefined;

  constructor(readonly ms: number, caller: ClientSignal) {
    super();
    this.at = performance.now() + ms;
    if (caller.aborted) this.abort(caller.reason); else caller.once('abort', () => this.abort(caller.reason));
    this.arm();
  }

  private readonly fire = (): void => { this.expired = true; this.abort(); };

  /**
   * Starts the clock for what is left, unless it runs: done() stops it when a stream's
   * head arrives, and an attempt after that (the stream failed before its first event)
   * is bounded again.
   */
  arm(): void {
    if (this.timer || this.timed || this.expired || this.aborted) return;
    const left = Math.max(0, this.left());
    if (left < 10 * TICK_MS) {
      this.timer = setTimeout(this.fire, left);
    } else {
      this.timed = { deadline: Date.now() + left, expired: this.fire };
      watch(this.timed);
    }
  }

  /** What attempts listen to: the deadline itself. */
  get signal(): ClientSignal { return this; }

  /** Milliseconds left; 0 or less once passed. */
  left(): number { return this.at - performance.now(); }

  error(): GatewayError {
    return new GatewayError('upstream_timeout', `No upstream answered within the request's deadline of ${this.ms} ms (retries and fallbacks included).`);
  }

  done(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.timed) unwatch(this.timed);
    this.timed = undefined;
  }
}

export interface AttemptHooks {
  /** Called after every attempt with its outcome; returning false stops retrying (an opened circuit). */
  after(err: unknown | undefined, latencyMs: number): boolean;
}

/**
 * Runs `attempt` until it succeeds, fails for good, the policy says stop, or
 * the deadline passes (then the failure is the deadline's upstream_timeout);
 * rethrows the last failure. `random` is injectable so tests can bound the waits.
 */
export async function withRetry<T>(
  policy: RetryPolicy, deadline: Deadline, attempt: (signal: ClientSignal) => Promise<T>, hooks: AttemptHooks, random = Math.random,
): Promise<T> {
  for (let retry = 0; ; retry++) {
    const t0 = performance.now();
    deadline.arm();
    try {
      const value = await attempt(deadline);
      hooks.after(undefined, performance.now() - t0);
      return value;
    } catch (failure) {
      const err = deadline.expired ? deadline.error() : deadline.reason ?? failure;
      const goOn = hooks.after(err, performance.now() - t0);
      if (!goOn || deadline.aborted || retry + 1 >= policy.max_attempts || !isRetryable(err)) throw err;
      const wait = Math.max(backoffMs(policy, retry, random), retryAfterMs(err) ?? 0);
      // A wait that would end past the deadline is not worth starting: the caller gets the failure now.
      if (wait >= deadline.left()) throw err;
      if (!(await pause(wait, deadline))) throw err;
    }
  }
}
