// GET /v1/api-keys/{id}/usage: where a key and its organisation stand against
// each of their limits, read from the same store that decides (no consumption).
import type { LimitSpec } from '../config/resilience-schema.js';
import { remaining, resetMs } from './gcra.js';
import type { Limits, Scope } from './limits.js';
import { periodOf } from './periods.js';

export interface MeterUsage { limit: number; remaining: number; reset_ms: number }
export interface BudgetUsage { amount: number; period: 'day' | 'month'; spent: number; remaining: number; resets_at: string }
export interface ScopeUsage { requests?: MeterUsage; tokens?: MeterUsage; budget_usd?: BudgetUsage }

async function scopeUsage(l: Limits, scope: Scope, id: string, s: LimitSpec | undefined, now: number): Promise<ScopeUsage | null> {
  if (!s) return null;
  const kinds = ([['requests', s.rpm, 'r'], ['tokens', s.tpm, 't']] as const).filter(([, lim]) => lim !== undefined);
  const b = s.budget_usd;
  const { tats, spent } = await l.store.peek(kinds.map(([, , k]) => l.rateKey(scope, id, k)), b ? [l.spendKey(scope, id, b.period, now)] : []);
  const out: ScopeUsage = {};
  kinds.forEach(([kind, lim], i) => {
    out[kind] = { limit: lim!, remaining: remaining(tats[i]!, now, lim!), reset_ms: Math.ceil(resetMs(tats[i]!, now)) };
  });
  if (b) {
    const used = Math.round(spent[0]! * 1e9) / 1e9;
    out.budget_usd = { amount: b.amount, period: b.period, spent: used, remaining: Math.max(0, Math.round((b.amount - used) * 1e9) / 1e9), resets_at: new Date(periodOf(b.period, now).endMs).toISOString() };
  }
  return out;
}

export async function usageOf(l: Limits, keyId: string, org: string): Promise<{ key: ScopeUsage | null; organization: ScopeUsage | null }> {
  const now = Date.now();
  const [key, organization] = await Promise.all([
    scopeUsage(l, 'key', keyId, l.keySpec(keyId), now),
    scopeUsage(l, 'org', org, l.orgSpec(org), now),
  ]);
  return { key, organization };
}
