// Keeps every organisation's compiled rules current on this instance. One cheap
// query per poll reads all version numbers; only organisations whose version
// moved are reloaded and recompiled. The request path only ever reads the
// compiled maps, so a slow or failing database never delays a request: the
// previous rules stay in force until a poll succeeds.
import type pg from 'pg';
import type { RuleMatcher, RuleTarget } from '../routing/resolve-chat.js';
import { compileRules, type CompiledRules } from '../routing/rule-compiler.js';
import { loadRules, rulesVersions } from './routes-repo.js';

export class RulesPoller {
  private compiled = new Map<string, CompiledRules>();
  private versions = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;

  constructor(private readonly pool: pg.Pool, private readonly opts: { intervalMs: number; onError: (err: unknown) => void }) {}

  /** The hot-path matcher handed to resolveChat. */
  readonly match: RuleMatcher = (orgId: string, requestedModel: string): RuleTarget | undefined =>
    this.compiled.get(orgId)?.get(requestedModel);

  /** Loads everything once, then polls. */
  async start(): Promise<void> {
    await this.poll();
    this.timer = setInterval(() => { void this.refresh(); }, this.opts.intervalMs);
    this.timer.unref();
  }

  /**
   * Polls now (this instance just wrote a rule, say). A poll already running may
   * have read the versions before the caller's write, so a call made during one
   * waits for one more poll after it.
   */
  refresh(): Promise<void> {
    if (this.running) {
      this.queued ??= this.running.then(() => { this.queued = undefined; return this.refresh(); });
      return this.queued;
    }
    this.running = this.poll().catch(this.opts.onError).finally(() => { this.running = undefined; });
    return this.running;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await (this.queued ?? this.running);
  }

  private async poll(): Promise<void> {
    const versions = await rulesVersions(this.pool);
    const changed = [...versions].filter(([org, v]) => this.versions.get(org) !== v).map(([org]) => org);
    if (!changed.length) return;
    const byOrg = new Map<string, Awaited<ReturnType<typeof loadRules>>>(changed.map((org) => [org, []]));
    for (const rule of await loadRules(this.pool, changed)) byOrg.get(rule.organization_id)!.push(rule);
    // Swap in a new outer map so that a reader never sees a half-updated set.
    const next = new Map(this.compiled);
    for (const [org, rules] of byOrg) {
      if (rules.length) next.set(org, compileRules(rules)); else next.delete(org);
      this.versions.set(org, versions.get(org)!);
    }
    this.compiled = next;
  }
}
