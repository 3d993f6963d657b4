// The readiness probe behind GET /readyz: Postgres answers, every migration
// this build ships is applied, and the policy workers (if any) are up. A load
// balancer may probe it many times a second, so one result serves every probe
// for `cacheMs` and concurrent probes share one query. The answer names the
// check that failed and nothing else: no hostnames, no driver messages.
import type pg from 'pg';
import type { PolicyEngine } from '../policy/types.js';

export type CheckState = 'ok' | 'failing' | 'pending' | 'unknown';

export interface ReadinessReport {
  ready: boolean;
  checks: { database: CheckState; migrations: CheckState; policy_workers?: CheckState };
}

export interface ReadinessOptions {
  pool: pg.Pool;
  /** The highest migration version this build ships. */
  latestMigration: number;
  policy: PolicyEngine | undefined;
  cacheMs?: number;
  timeoutMs?: number;
}

export class Readiness {
  private cached: { at: number; report: Promise<ReadinessReport> } | undefined;
  private readonly cacheMs: number;
  private readonly timeoutMs: number;

  constructor(private readonly opts: ReadinessOptions) {
    this.cacheMs = opts.cacheMs ?? 1_000;
    this.timeoutMs = opts.timeoutMs ?? 500;
  }

  check(): Promise<ReadinessReport> {
    const now = Date.now();
    if (!this.cached || now - this.cached.at >= this.cacheMs) this.cached = { at: now, report: this.run() };
    return this.cached.report;
  }

  private async run(): Promise<ReadinessReport> {
    const applied = await this.appliedVersion();
    const checks: ReadinessReport['checks'] = {
      database: applied === undefined ? 'failing' : 'ok',
      migrations: applied === undefined ? 'unknown' : applied >= this.opts.latestMigration ? 'ok' : 'pending',
    };
    if (this.opts.policy) checks.policy_workers = this.opts.policy.ready() ? 'ok' : 'failing';
    return { ready: Object.values(checks).every((c) => c === 'ok'), checks };
  }

  /** The applied schema version, or undefined when Postgres did not answer in time. Doubles as the `SELECT 1`. */
  private async appliedVersion(): Promise<number | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<undefined>((ok) => { timer = setTimeout(() => ok(undefined), this.timeoutMs); });
    // A query that outlives the timeout is left to fail or finish on its own; its result is dropped.
    const query = this.opts.pool.query<{ v: number }>('SELECT coalesce(max(version), 0)::int AS v FROM schema_migrations')
      .then((r) => r.rows[0]?.v ?? 0, () => undefined);
    try {
      return await Promise.race([query, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
