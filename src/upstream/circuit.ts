// A circuit breaker per upstream (provider + origin). Closed, it counts
// failed calls (a call is judged after its retries); it opens after `consecutive_failures` in a row, or when the calls
// of one tumbling window of `window_ms` (at least `min_requests` of them)
// failed at `failure_rate` or more. Open, it refuses at once, so callers go to
// a fallback or get a fast 503 instead of waiting on timeouts. After `open_ms`
// it lets one probe through (half-open): success closes it, failure re-opens.
// A 429 is not a failure here: a rate-limited upstream is healthy, and its
// retry-after already says when to come back.
import type { CircuitPolicy } from '../config/resilience-schema.js';
import { GatewayError } from '../errors.js';
import { isRetryable } from './retry.js';

export const enum CircuitState { Closed = 0, HalfOpen = 1, Open = 2 }

/**
 * True when an attempt's outcome counts against the upstream's health: any 5xx
 * (Anthropic's 529 "overloaded" and a 501 too, not only the statuses worth a
 * retry), a timeout, or a connection that failed. A 429 or another 4xx is not.
 */
export function isOutage(err: unknown): boolean {
  if (err instanceof GatewayError && err.upstreamStatus !== undefined) return err.upstreamStatus >= 500;
  return isRetryable(err);
}

/** What allow() granted: a call while closed, or the half-open probe, whose outcome alone decides the circuit. */
export type Ticket = 'call' | 'probe';

export class Circuit {
  state: CircuitState = CircuitState.Closed;
  private consecutive = 0;
  private windowStart = 0;
  private calls = 0;
  private failures = 0;
  private openedAt = 0;
  private probing = false;

  constructor(private readonly policy: CircuitPolicy, private readonly now: () => number = Date.now) {}

  /** May a call go now, and as what? In half-open, only one probe at a time; undefined when none may. */
  allow(): Ticket | undefined {
    if (this.state === CircuitState.Closed) return 'call';
    if (this.refusing()) return undefined;
    this.state = CircuitState.HalfOpen;
    this.probing = true;
    return 'probe';
  }

  /**
   * Would allow() refuse a call now? Changes nothing, so asking takes no probe: the
   * `auto` picker asks before the chain calls allow(). (Open, no probe is ever out.)
   */
  refusing(): boolean {
    if (this.state === CircuitState.Closed) return false;
    if (this.state === CircuitState.Open && this.now() - this.openedAt < this.policy.open_ms) return true;
    return this.probing;
  }

  /**
   * Reports one call's outcome. Once the circuit has left closed, only the probe's
   * counts: a slow call let through before it opened, ending now, said nothing about
   * the upstream since (its success closed the circuit early, without a probe).
   */
  record(failed: boolean, ticket: Ticket): void {
    if (this.state !== CircuitState.Closed) {
      if (ticket !== 'probe') return;
      this.probing = false;
      if (failed) this.open(); else this.close();
      return;
    }
    const now = this.now();
    if (now - this.windowStart >= this.policy.window_ms) { this.windowStart = now; this.calls = 0; this.failures = 0; }
    this.calls++;
    if (!failed) { this.consecutive = 0; return; }
    this.failures++;
    this.consecutive++;
    const p = this.policy;
    if (this.consecutive >= p.consecutive_failures || (this.calls >= p.min_requests && this.failures / this.calls >= p.failure_rate)) this.open();
  }

  /** A call that ended without an outcome (the caller left): if it was the probe, let the next one through. */
  release(ticket: Ticket): void {
    if (ticket === 'probe') this.probing = false;
  }

  private open(): void {
    this.state = CircuitState.Open;
    this.openedAt = this.now();
  }

  private close(): void {
    this.state = CircuitState.Closed;
    this.consecutive = 0;
    this.calls = 0;
    this.failures = 0;
    this.windowStart = this.now();
  }
}

/** One circuit per provider and origin, created on first use; exposed as a gauge at scrape time. */
export class Circuits {
  readonly all = new Map<string, { provider: string; origin: string; circuit: Circuit }>();
  /**
   * By provider, then base URL: both are config strings V8 hashed long ago,
   * where the joined `provider origin` key was a new string hashed on every call.
   */
  private readonly byUrl = new Map<string, Map<string, Circuit>>();

  constructor(private readonly policy: CircuitPolicy) {}

  get(provider: string, baseUrl: string): Circuit {
    let urls = this.byUrl.get(provider);
    const known = urls?.get(baseUrl);
    if (known) return known;
    let origin: string;
    try { origin = new URL(baseUrl).origin; } catch { origin = baseUrl; }
    const key = `${provider} ${origin}`;
    let hit = this.all.get(key);
    if (!hit) { hit = { provider, origin, circuit: new Circuit(this.policy) }; this.all.set(key, hit); }
    if (!urls) this.byUrl.set(provider, (urls = new Map()));
    urls.set(baseUrl, hit.circuit);
    return hit.circuit;
  }
}
