// Retries, fallbacks and circuit breaking around one upstream operation. The
// chain is the resolved target first, then its fallbacks; each is skipped when
// its provider has no credential or its circuit is open, and otherwise tried
// with its provider's retry policy. The next target is tried only after a
// failure that another upstream might not have: a caller's own mistake (400,
// 404, 413, 422) is returned as it is, since every target would refuse it too.
// One deadline spans the whole chain: the first target's `deadline_ms`, from
// the moment the chain starts, over every attempt, wait and fallback.
import type { RetryPolicy } from '../config/resilience-schema.js';
import type { ModelEntry, UpstreamAttempt, UpstreamTarget } from '../domain.js';
import { GatewayError } from '../errors.js';
import type { ClientSignal } from '../http/client-signal.js';
import { CircuitState, isOutage, type Circuit } from './circuit.js';
import { Deadline, isRetryable, withRetry } from './retry.js';

export interface ChainDeps {
  isConfigured(provider: string): boolean;
  target(entry: ModelEntry): UpstreamTarget;
  retryPolicy(provider: string): RetryPolicy;
  /** The circuit breaker of `entry`'s upstream; none for the in-process mock. */
  circuit(entry: ModelEntry): Circuit | undefined;
  /**
   * Whether that circuit refuses a call now, read without taking its probe. Not used
   * by the chain: the `auto` picker asks it first.
   */
  refusing(entry: ModelEntry): boolean;
  /** Injectable jitter, for tests that bound the waits. */
  random?: () => number;
}

export interface ChainResult<T> {
  value: T;
  entry: ModelEntry;
  /** Index in the chain of the target that answered: 0 is the primary. */
  index: number;
  attempts: UpstreamAttempt[];
}

/** The status an attempt is recorded with. */
function attemptStatus(err: unknown, signal: ClientSignal): number {
  if (err === undefined) return 200;
  if (signal.aborted) return 499;
  if (err instanceof GatewayError) return err.upstreamStatus ?? (err.code === 'upstream_timeout' ? 504 : err.status);
  return 500;
}

/** Failures after which the next target is worth a try. */
function worthFallback(err: unknown): boolean {
  if (isRetryable(err)) return true;
  // The provider refused the gateway's own credential (a 502 carrying the upstream's 401/403): another provider may not.
  return err instanceof GatewayError && err.code === 'upstream_error' && err.status === 502;
}

/**
 * `op` must send its upstream call with the signal it is given, not the
 * caller's, and fail as soon as it fires: that signal is also how the
 * deadline arrives (see Deadline).
 */
export async function runChain<T>(
  deps: ChainDeps, chain: readonly ModelEntry[], signal: ClientSignal, op: (target: UpstreamTarget, signal: ClientSignal) => Promise<T>,
  /** Filled as the chain runs, so the caller has it when the chain throws too. */
  attempts: UpstreamAttempt[] = [],
): Promise<ChainResult<T>> {
  const deadline = new Deadline(deps.retryPolicy(chain[0]!.provider).deadline_ms, signal);
  try {
    let last: unknown;
    let anyTried = false;
    for (let index = 0; index < chain.length; index++) {
      const entry = chain[index]!;
      const skip = (status: number) => attempts.push({ provider: entry.provider, model: entry.id, status, latency_ms: 0 });
      if (!deps.isConfigured(entry.provider)) { skip(409); continue; }
      const target = deps.target(entry);
      const circuit = deps.circuit(entry);
      const ticket = circuit?.allow();
      if (circuit && !ticket) { skip(503); continue; }
      anyTried = true;
      try {
        const value = await withRetry(deps.retryPolicy(entry.provider), deadline, (s) => op(target, s), {
          after(err, ms) {
            attempts.push({ provider: entry.provider, model: entry.id, status: attemptStatus(err, signal), latency_ms: Math.round(ms) });
            // A half-open probe gets one attempt: its failure re-opens the circuit at once.
            return !circuit || circuit.state === CircuitState.Closed;
          },
        }, deps.random);
        circuit?.record(false, ticket!);
        return { value, entry, index, attempts };
      } catch (err) {
        last = err;
        // The circuit counts calls (after their retries), not attempts: N failed requests in a row open it.
        if (circuit) { if (signal.aborted) circuit.release(ticket!); else circuit.record(isOutage(err), ticket!); }
        // Past the deadline, no fallback gets a turn: the caller has waited as long as it was promised.
        if (signal.aborted || deadline.expired || !worthFallback(err)) throw err;
      }
    }
    if (!anyTried) {
      // Every target was skipped: say why, without the latency of trying.
      const open = attempts.some((a) => a.status === 503);
      const names = chain.map((e) => `${e.provider}/${e.id}`).join(', ');
      throw open
        ? new GatewayError('upstream_unavailable', `No upstream available for ${names}: circuit open.`)
        : new GatewayError('model_not_configured', `No provider of ${names} has a credential mounted.`, { param: 'model' });
    }
    throw last;
  } finally {
    deadline.done();
  }
}
