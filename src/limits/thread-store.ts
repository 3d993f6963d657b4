// The in-process limiter of a process with several gateway threads. Limits
// hold per instance, not per thread, so the process has one LocalStore, on
// the main thread, and each gateway thread asks it over its MessagePort: an
// admit is one message each way (the store answers synchronously there), a
// settle one message with no answer. With one thread, app.ts keeps the
// LocalStore in the request's own thread, with no message at all.
import type { LocalStore } from './local-store.js';
import type { BudgetReq, LimitStore, MeterReq, SettleReq, StoreCall, Verdict } from './store.js';

export interface StoreChannel {
  /** Sends a call and resolves with the main thread's answer. */
  ask(call: StoreCall): Promise<unknown>;
  /** Sends a call that has no answer. */
  tell(call: StoreCall): void;
}

export class ThreadStore implements LimitStore {
  constructor(private readonly channel: StoreChannel) {}

  admit(now: number, meters: readonly MeterReq[], budgets: readonly BudgetReq[]): Promise<Verdict> {
    return this.channel.ask({ op: 'admit', now, meters, budgets }) as Promise<Verdict>;
  }

  settle(now: number, s: SettleReq): void {
    this.channel.tell({ op: 'settle', now, s });
  }

  peek(meterKeys: readonly string[], budgetKeys: readonly string[]): Promise<{ tats: number[]; spent: number[] }> {
    return this.channel.ask({ op: 'peek', meterKeys, budgetKeys }) as Promise<{ tats: number[]; spent: number[] }>;
  }

  async seed(key: string, amount: number, ttlMs: number): Promise<void> {
    await this.channel.ask({ op: 'seed', key, amount, ttlMs });
  }

  /** The store itself belongs to the main thread, which closes it after every gateway thread. */
  async close(): Promise<void> {}
}

/** The main thread's side: runs one call against the process's store. */
export function serveStoreCall(store: LocalStore, c: StoreCall): unknown {
  switch (c.op) {
    case 'admit': return store.admit(c.now, c.meters, c.budgets);
    case 'settle': store.settle(c.now, c.s); return undefined;
    case 'peek': return store.peek(c.meterKeys, c.budgetKeys);
    case 'seed': return store.seed(c.key, c.amount, c.ttlMs);
  }
}
