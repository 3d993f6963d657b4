// Where limiter state lives: in process (one instance, or Redis down) or in
// Redis (shared by every instance). Both answer the same questions.
export interface MeterReq {
  /** Full state key, prefix included. */
  key: string;
  /** Units per minute. */
  limit: number;
  cost: number;
  kind: 'requests' | 'tokens';
}

export interface BudgetReq {
  key: string;
  amount: number;
  ttlMs: number;
}

export interface Verdict {
  /** 0 admitted, 1 over a rate limit, 2 over a budget (no state changed unless 0). */
  status: 0 | 1 | 2;
  retryAfterMs: number;
  /** Per meter: its TAT after the decision. */
  tats: number[];
  /** Per budget: spent so far in the period. */
  spent: number[];
}

export interface SettleReq {
  /** Token meters to correct by (actual - estimated) units. */
  adjust: Array<{ key: string; limit: number; delta: number }>;
  /** Budgets to charge. */
  spend: Array<{ key: string; amount: number; ttlMs: number }>;
}

export interface LimitStore {
  admit(now: number, meters: readonly MeterReq[], budgets: readonly BudgetReq[]): Verdict | Promise<Verdict>;
  /** Fire and forget: never awaited by a request. */
  settle(now: number, s: SettleReq): void;
  /** Reads without consuming, for the usage endpoint. */
  peek(meterKeys: readonly string[], budgetKeys: readonly string[]): Promise<{ tats: number[]; spent: number[] }>;
  /** Raises a spend counter to at least `amount` (what Postgres says was spent). */
  seed(key: string, amount: number, ttlMs: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * One LimitStore call as it crosses from a gateway thread to the main thread,
 * which holds the process's one in-process store (src/limits/thread-store.ts).
 */
export type StoreCall =
  | { op: 'admit'; now: number; meters: readonly MeterReq[]; budgets: readonly BudgetReq[] }
  | { op: 'settle'; now: number; s: SettleReq }
  | { op: 'peek'; meterKeys: readonly string[]; budgetKeys: readonly string[] }
  | { op: 'seed'; key: string; amount: number; ttlMs: number };
