// The shared store. Every decision is one EVALSHA (ioredis sends EVAL on a
// NOSCRIPT and caches the digest). While Redis is not ready, or a command
// fails, the in-process store decides instead: a limit is never a reason to
// refuse a request because Redis is down. Spend is always mirrored in process
// too, so that fallback still knows this instance's spend and the seed; when
// Redis drops, open-limits.ts raises it to the traces' sum (every instance's).
import type { Redis } from 'ioredis';
import { WINDOW_MS } from './gcra.js';
import { LocalStore } from './local-store.js';
import { ADMIT, SEED, SETTLE } from './redis-scripts.js';
import type { BudgetReq, LimitStore, MeterReq, SettleReq, Verdict } from './store.js';

type Scripted = Redis & {
  sluiceAdmit(...args: Array<string | number>): Promise<string[]>;
  sluiceSettle(...args: Array<string | number>): Promise<number>;
  sluiceSeed(...args: Array<string | number>): Promise<number>;
};

export class RedisStore implements LimitStore {
  private readonly redis: Scripted;
  /** Decisions taken in process because Redis was unavailable: a metric, and the outage test's witness. */
  fallbacks = 0;

  /** `local` decides while Redis is down: the process's shared store when there are several gateway threads. */
  constructor(redis: Redis, private readonly onError: (err: unknown) => void, readonly local: LimitStore = new LocalStore()) {
    redis.defineCommand('sluiceAdmit', { lua: ADMIT });
    redis.defineCommand('sluiceSettle', { lua: SETTLE });
    redis.defineCommand('sluiceSeed', { numberOfKeys: 1, lua: SEED });
    this.redis = redis as Scripted;
  }

  private get up(): boolean {
    return this.redis.status === 'ready';
  }

  admit(now: number, meters: readonly MeterReq[], budgets: readonly BudgetReq[]): Verdict | Promise<Verdict> {
    if (!this.up) { this.fallbacks++; return this.local.admit(now, meters, budgets); }
    const args: Array<string | number> = [meters.length + budgets.length];
    for (const m of meters) args.push(m.key);
    for (const b of budgets) args.push(b.key);
    args.push(now, meters.length, WINDOW_MS);
    for (const m of meters) args.push(WINDOW_MS / m.limit, m.cost);
    for (const b of budgets) args.push(b.amount);
    return this.redis.sluiceAdmit(...args).then((out) => {
      const n = meters.length;
      return {
        status: Number(out[0]) as Verdict['status'],
        retryAfterMs: Number(out[1]),
        tats: out.slice(2, 2 + n).map(Number),
        spent: out.slice(2 + n).map(Number),
      };
    }, (err: unknown) => {
      this.onError(err);
      this.fallbacks++;
      return this.local.admit(now, meters, budgets);
    });
  }

  settle(now: number, s: SettleReq): void {
    this.local.settle(now, { adjust: [], spend: s.spend });
    if (!this.up || (!s.adjust.length && !s.spend.length)) return;
    const args: Array<string | number> = [s.adjust.length + s.spend.length];
    for (const a of s.adjust) args.push(a.key);
    for (const b of s.spend) args.push(b.key);
    args.push(now, s.adjust.length);
    for (const a of s.adjust) args.push((WINDOW_MS / a.limit) * a.delta);
    for (const b of s.spend) args.push(b.amount, Math.ceil(b.ttlMs));
    this.redis.sluiceSettle(...args).catch(this.onError);
  }

  async peek(meterKeys: readonly string[], budgetKeys: readonly string[]): Promise<{ tats: number[]; spent: number[] }> {
    const keys = [...meterKeys, ...budgetKeys];
    if (!this.up || !keys.length) return this.local.peek(meterKeys, budgetKeys);
    try {
      const vals = await this.redis.mget(...keys);
      const nums = vals.map((v) => (v === null ? 0 : Number(v)));
      return { tats: nums.slice(0, meterKeys.length), spent: nums.slice(meterKeys.length) };
    } catch {
      return this.local.peek(meterKeys, budgetKeys);
    }
  }

  async seed(key: string, amount: number, ttlMs: number): Promise<void> {
    await this.local.seed(key, amount, ttlMs);
    if (!this.up) return;
    await this.redis.sluiceSeed(key, amount, Math.ceil(ttlMs)).catch(this.onError);
  }

  async close(): Promise<void> {
    await this.local.close();
  }
}
