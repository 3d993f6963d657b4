// The in-process store: two Maps. It decides synchronously, so a request with
// limits pays a few Map operations and no await. Expired entries are swept on
// a timer, never on the request path.
import { gcra, WINDOW_MS } from './gcra.js';
import type { BudgetReq, LimitStore, MeterReq, SettleReq, Verdict } from './store.js';

export class LocalStore implements LimitStore {
  private readonly tats = new Map<string, number>();
  private readonly spent = new Map<string, { amount: number; expires: number }>();
  private readonly sweeper: NodeJS.Timeout;

  constructor() {
    this.sweeper = setInterval(() => this.sweep(Date.now()), WINDOW_MS);
    this.sweeper.unref();
  }

  admit(now: number, meters: readonly MeterReq[], budgets: readonly BudgetReq[]): Verdict {
    const spent = budgets.map((b) => this.spent.get(b.key)?.amount ?? 0);
    for (let j = 0; j < budgets.length; j++) {
      if (spent[j]! >= budgets[j]!.amount) return { status: 2, retryAfterMs: 0, tats: meters.map((m) => this.tats.get(m.key) ?? 0), spent };
    }
    const tats: number[] = new Array(meters.length);
    let wait = 0;
    for (let i = 0; i < meters.length; i++) {
      const m = meters[i]!;
      const step = gcra(this.tats.get(m.key) ?? 0, now, m.limit, m.cost);
      tats[i] = step.tat;
      if (step.waitMs > wait) wait = step.waitMs;
    }
    if (wait > 0) {
      // All or nothing: a request refused by one meter consumes none of the others.
      for (let i = 0; i < meters.length; i++) tats[i] = Math.max(this.tats.get(meters[i]!.key) ?? 0, now);
      return { status: 1, retryAfterMs: wait, tats, spent };
    }
    for (let i = 0; i < meters.length; i++) this.tats.set(meters[i]!.key, tats[i]!);
    return { status: 0, retryAfterMs: 0, tats, spent };
  }

  settle(now: number, s: SettleReq): void {
    for (const a of s.adjust) {
      const tat = Math.max(this.tats.get(a.key) ?? 0, now) + (WINDOW_MS / a.limit) * a.delta;
      if (tat <= now) this.tats.delete(a.key); else this.tats.set(a.key, tat);
    }
    for (const b of s.spend) {
      const cur = this.spent.get(b.key);
      if (cur) cur.amount += b.amount; else this.spent.set(b.key, { amount: b.amount, expires: now + b.ttlMs });
    }
  }

  async peek(meterKeys: readonly string[], budgetKeys: readonly string[]): Promise<{ tats: number[]; spent: number[] }> {
    return { tats: meterKeys.map((k) => this.tats.get(k) ?? 0), spent: budgetKeys.map((k) => this.spent.get(k)?.amount ?? 0) };
  }

  async seed(key: string, amount: number, ttlMs: number): Promise<void> {
    const cur = this.spent.get(key);
    if (!cur) this.spent.set(key, { amount, expires: Date.now() + ttlMs });
    else if (cur.amount < amount) cur.amount = amount;
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
  }

  private sweep(now: number): void {
    for (const [k, t] of this.tats) if (t <= now) this.tats.delete(k);
    for (const [k, v] of this.spent) if (v.expires <= now) this.spent.delete(k);
  }
}
