// Who is limited to what, and the store that counts. Organisation limits come
// from the config; key limits from Postgres, polled like routing rules, so a
// request reads only Maps. Budget counters are seeded from the traces' spend
// in the current period at start, when a key gains a budget, and when Redis
// comes back (it may have lost them), or is found to have lost them without
// going away (a FLUSHALL, an eviction: the seeded marker is gone), so neither
// a restart nor a flush resets spend. While
// the shared store is down they are re-seeded at every poll instead: each
// instance then decides in process, and the traces are the only way it learns
// what the other instances spent.
import type pg from 'pg';
import type { LimitSpec } from '../config/resilience-schema.js';
import { keyLimitsChangedSince, spendSince } from '../store/limits-repo.js';
import { periodOf, spendTtlMs, type Period } from './periods.js';
import type { LimitStore } from './store.js';

export type Scope = 'key' | 'org';

export interface LimitsOptions {
  pool: pg.Pool;
  store: LimitStore;
  prefix: string;
  orgSpecs: ReadonlyMap<string, LimitSpec>;
  pollMs: number;
  onError(err: unknown): void;
  /** True while the shared store is unreachable and the in-process one decides. */
  degraded?: () => boolean;
  /**
   * The shared store's mark that its budget counters were seeded: a flushed or
   * evicting Redis keeps its connection, so only a missing mark says it lost them.
   */
  seeded?: { present(): Promise<boolean>; set(): Promise<void> };
}

/** Poll reads overlap by this much, so a write committed just after a poll read its clock is not missed. */
const POLL_OVERLAP_MS = 2_000;

export class Limits {
  readonly store: LimitStore;
  private keys = new Map<string, LimitSpec>();
  private since: Date | null = null;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  private catchingUp: Promise<void> | undefined;

  constructor(private readonly o: LimitsOptions) {
    this.store = o.store;
  }

  /** The hot path's first question; two Map reads and no allocation when nothing applies. */
  keySpec(keyId: string): LimitSpec | undefined { return this.keys.get(keyId); }
  orgSpec(org: string): LimitSpec | undefined { return this.o.orgSpecs.get(org); }

  rateKey(scope: Scope, id: string, kind: 'r' | 't'): string {
    return `${this.o.prefix}rl:${scope === 'key' ? 'k' : 'o'}:${id}:${kind}`;
  }

  spendKey(scope: Scope, id: string, period: Period, now: number): string {
    return `${this.o.prefix}spend:${scope === 'key' ? 'k' : 'o'}:${id}:${periodOf(period, now).tag}`;
  }

  /** Rejects when Postgres cannot be read; polling goes on regardless and catches up. */
  async start(): Promise<void> {
    this.timer = setInterval(() => {
      void this.refresh();
      if (this.o.degraded?.()) this.catchUp();
      else if (this.o.seeded && !this.catchingUp) this.o.seeded.present().then((ok) => { if (!ok) this.catchUp(); }, this.o.onError);
    }, this.o.pollMs);
    this.timer.unref();
    await this.poll();
    await this.seed('org', [...this.o.orgSpecs]);
    await this.mark();
  }

  /**
   * Polls now (after this instance wrote a key's limits). A poll already running
   * may have read before the caller's write committed, so a call made during one
   * waits for one more poll after it, which every such call shares (until
   * 2026-11-29 it shared the running poll, and of two PATCHes of one key in a
   * row the second applied only at the next timed poll).
   */
  refresh(): Promise<void> {
    if (this.running) {
      this.queued ??= this.running.then(() => { this.queued = undefined; return this.refresh(); });
      return this.queued;
    }
    this.running = this.poll().catch(this.o.onError).finally(() => { this.running = undefined; });
    return this.running;
  }

  /** Re-seeds every budget counter: Redis came back, possibly empty. */
  reseed(): Promise<void> {
    return Promise.all([
      this.seed('org', [...this.o.orgSpecs]),
      this.seed('key', [...this.keys]),
    ]).then(() => this.mark()).catch(this.o.onError);
  }

  /** Marks the shared store seeded, when it is up: in an outage the in-process counters were seeded, not it. */
  private async mark(): Promise<void> {
    if (!this.o.degraded?.()) await this.o.seeded?.set();
  }

  /**
   * Raises the in-process counters to what the traces say was spent, once at a
   * time: while Redis is down, this is how spend made through other instances
   * reaches this one, a poll interval (plus the traces' batch age) late.
   */
  catchUp(): void {
    this.catchingUp ??= this.reseed().finally(() => { this.catchingUp = undefined; });
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await (this.queued ?? this.running);
    await this.catchingUp;
    await this.store.close();
  }

  private async poll(): Promise<void> {
    const { rows, at } = await keyLimitsChangedSince(this.o.pool, this.since);
    this.since = new Date(at.getTime() - POLL_OVERLAP_MS);
    if (!rows.length) return;
    const next = new Map(this.keys);
    const budgeted: Array<[string, LimitSpec]> = [];
    for (const r of rows) {
      const empty = r.limits.rpm === undefined && r.limits.tpm === undefined && r.limits.budget_usd === undefined;
      const old = this.keys.get(r.api_key_id);
      if (empty) next.delete(r.api_key_id); else next.set(r.api_key_id, r.limits);
      const b = r.limits.budget_usd;
      if (b && old?.budget_usd?.period !== b.period) budgeted.push([r.api_key_id, r.limits]);
    }
    // Swapped whole, so a request never sees half a poll.
    this.keys = next;
    await this.seed('key', budgeted);
  }

  private async seed(scope: Scope, specs: Array<[string, LimitSpec]>): Promise<void> {
    const now = Date.now();
    for (const period of ['day', 'month'] as const) {
      const ids = specs.filter(([, s]) => s.budget_usd?.period === period).map(([id]) => id);
      if (!ids.length) continue;
      const w = periodOf(period, now);
      const sums = await spendSince(this.o.pool, scope === 'key' ? 'api_key_id' : 'organization_id', ids, w.startMs);
      for (const id of ids) await this.store.seed(this.spendKey(scope, id, period, now), sums.get(id) ?? 0, spendTtlMs(w, now));
    }
  }
}
