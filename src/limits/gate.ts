// The limits stage of a request: admit before the upstream call, settle after
// it. A request whose key and organisation have no limits costs two Map reads
// and nothing else. Otherwise the request's meters (requests and tokens per
// minute, key and organisation) and budgets are decided at once by the store,
// in memory or in one Redis round trip; the database is never awaited.
import type { PassHeaders } from '../domain.js';
import { GatewayError } from '../errors.js';
import type { LimitSpec } from '../config/resilience-schema.js';
import { duration, remaining, resetMs } from './gcra.js';
import type { Limits, Scope } from './limits.js';
import { periodOf, spendTtlMs } from './periods.js';
import type { BudgetReq, MeterReq, Verdict } from './store.js';

export interface Admission {
  now: number;
  meters: MeterReq[];
  tats: number[];
  /** Tokens charged up front: the prompt estimate. */
  estimate: number;
  budgets: BudgetReq[];
}

interface Subject { keyId: string; org: string }

function addMeters(l: Limits, scope: Scope, id: string, s: LimitSpec, tokens: number, meters: MeterReq[], budgets: BudgetReq[], now: number): void {
  if (s.rpm) meters.push({ key: l.rateKey(scope, id, 'r'), limit: s.rpm, cost: 1, kind: 'requests' });
  if (s.tpm) meters.push({ key: l.rateKey(scope, id, 't'), limit: s.tpm, cost: tokens, kind: 'tokens' });
  const b = s.budget_usd;
  if (b) budgets.push({ key: l.spendKey(scope, id, b.period, now), amount: b.amount, ttlMs: spendTtlMs(periodOf(b.period, now), now) });
}

/**
 * Undefined when the request may go on at once (no limits, or the in-process
 * store admitted it); a promise when Redis decides. Throws or rejects with
 * rate_limited / budget_exceeded.
 */
export function admit(l: Limits, who: Subject, tokens: number): Admission | undefined | Promise<Admission> {
  const ks = l.keySpec(who.keyId);
  const os = l.orgSpec(who.org);
  if (!ks && !os) return undefined;
  const now = Date.now();
  const meters: MeterReq[] = [];
  const budgets: BudgetReq[] = [];
  if (ks) addMeters(l, 'key', who.keyId, ks, tokens, meters, budgets, now);
  if (os) addMeters(l, 'org', who.org, os, tokens, meters, budgets, now);
  // A prompt larger than a whole tpm limit never passes, however long the caller waits: told so
  // rather than given a retry-after (until 2026-11-29 it was, and SDKs retried it in vain).
  for (const m of meters) if (m.cost > m.limit) throw tooLarge(m);
  const decide = (v: Verdict): Admission => {
    if (v.status === 2) throw budgetError(budgets, v, ks, os, now);
    if (v.status === 1) throw new GatewayError('rate_limited', 'Rate limit reached for this API key or organisation; retry after the time in retry-after.', {
      headers: [...retryHeaders(v.retryAfterMs), ...limitHeaders(meters, v.tats, now)],
    });
    return { now, meters, tats: v.tats, estimate: tokens, budgets };
  };
  const v = l.store.admit(now, meters, budgets);
  return v instanceof Promise ? v.then(decide) : decide(v);
}

/** Corrects the token meters to the real usage and charges the budgets; never awaited. */
export function settle(l: Limits, a: Admission, totalTokens: number, costUsd: number): void {
  const delta = totalTokens - a.estimate;
  const adjust = delta === 0 ? [] : a.meters.filter((m) => m.kind === 'tokens').map((m) => ({ key: m.key, limit: m.limit, delta }));
  const spend = costUsd > 0 ? a.budgets.map((b) => ({ key: b.key, amount: costUsd, ttlMs: b.ttlMs })) : [];
  if (adjust.length || spend.length) l.store.settle(Date.now(), { adjust, spend });
}

/** Past this wait an SDK is told not to retry: the caller decides, knowing the wait. */
const SDK_WAIT_MS = 60_000;

/**
 * Both headers tell the true wait; retry-after in whole seconds, rounded up,
 * never 0 (until 2026-11-29 both stopped at 60 s, so a meter in debt for
 * minutes sent callers back into 429s every minute). The openai SDK sleeps
 * whatever retry-after-ms says (its older versions ignored 60 s or more and
 * retried on their own backoff of seconds), so a longer wait also says
 * x-should-retry: false, which every version obeys.
 */
function retryHeaders(ms: number): Array<[string, string]> {
  const wait = Math.ceil(ms);
  const out: Array<[string, string]> = [['retry-after', String(Math.max(1, Math.ceil(wait / 1000)))], ['retry-after-ms', String(wait)]];
  if (wait > SDK_WAIT_MS) out.push(['x-should-retry', 'false']);
  return out;
}

function tooLarge(m: MeterReq): GatewayError {
  return new GatewayError('rate_limited', `This request's estimated ${m.cost} tokens exceed the limit of ${m.limit} tokens per minute, so it can never be admitted; shorten it or raise the limit.`, {
    headers: [['x-should-retry', 'false'], ['x-ratelimit-limit-tokens', String(m.limit)]],
  });
}

/** Per kind, the binding meter (fewest remaining) speaks for the request, in OpenAI's header names. */
function limitHeaders(meters: readonly MeterReq[], tats: readonly number[], now: number): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const kind of ['requests', 'tokens'] as const) {
    let best = -1;
    let left = Infinity;
    for (let i = 0; i < meters.length; i++) {
      if (meters[i]!.kind !== kind) continue;
      const r = remaining(tats[i]!, now, meters[i]!.limit);
      if (r < left) { left = r; best = i; }
    }
    if (best < 0) continue;
    out.push([`x-ratelimit-limit-${kind}`, String(meters[best]!.limit)], [`x-ratelimit-remaining-${kind}`, String(left)],
      [`x-ratelimit-reset-${kind}`, duration(resetMs(tats[best]!, now))]);
  }
  return out;
}

/**
 * The success path's headers: ours replace the upstream's x-ratelimit-* of a
 * kind we limit (the caller is bound by ours first); the upstream's stay for a
 * kind we do not limit.
 */
export function rateHeaders(a: Admission, upstream: PassHeaders): PassHeaders {
  const ours = limitHeaders(a.meters, a.tats, a.now);
  if (!ours.length) return upstream;
  const kinds = new Set(ours.map(([k]) => k.slice(k.lastIndexOf('-') + 1)));
  const kept = upstream.filter(([k]) => !(k.startsWith('x-ratelimit-') && kinds.has(k.slice(k.lastIndexOf('-') + 1))));
  return [...kept, ...ours];
}

function budgetError(budgets: readonly BudgetReq[], v: Verdict, ks: LimitSpec | undefined, os: LimitSpec | undefined, now: number): GatewayError {
  // Budgets are pushed key first, then organisation (addMeters order).
  const keyBudget = ks?.budget_usd;
  const i = v.spent.findIndex((s, j) => s >= budgets[j]!.amount);
  const scope = keyBudget && i === 0 ? 'API key' : 'organisation';
  const b = (scope === 'API key' ? keyBudget : os?.budget_usd)!;
  const resets = new Date(periodOf(b.period, now).endMs).toISOString();
  return new GatewayError('budget_exceeded', `The ${scope}'s ${b.period === 'day' ? 'daily' : 'monthly'} budget of ${b.amount} USD is spent; it resets at ${resets}.`, {
    // Retrying within the period cannot succeed: the SDK is told not to.
    headers: [['x-should-retry', 'false']],
  });
}
