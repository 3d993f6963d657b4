// The Piscina pool that runs large scans off the main thread. Every failure
// (timeout, full queue, a crashed thread, an error reply) comes back as a
// PolicyFailure, so the engine has one place that turns it into
// policy_unavailable and no path lets unscanned text through.
import { Piscina } from 'piscina';
import type { OrgPolicyConfig } from '../policy/config-schema.js';
import type { ModerateReply, PolicyFailure, PolicyReply, PolicyTask, ScanReply } from './protocol.js';

export interface PolicyPoolOptions {
  threads: number;
  taskTimeoutMs: number;
  maxQueue: number;
}

/** One organisation's policy as the pool sends it. */
export interface PoolPolicy {
  orgId: string;
  version: string;
  config: OrgPolicyConfig;
}

export class PolicyPool {
  readonly #piscina: Piscina<PolicyTask, PolicyReply>;
  readonly #timeoutMs: number;
  /** The version each organisation's config was last attached at; later tasks go without it. */
  readonly #sent = new Map<string, string>();
  /** Piscina would start fresh threads for a task after destroy(); a closed pool refuses instead. */
  #closed = false;

  constructor(opts: PolicyPoolOptions) {
    this.#piscina = new Piscina({
      // Compiled layout: this file and the worker sit side by side in dist/src/workers.
      filename: new URL('./policy.worker.js', import.meta.url).href,
      minThreads: opts.threads,
      maxThreads: opts.threads,
      maxQueue: opts.maxQueue,
    });
    this.#timeoutMs = opts.taskTimeoutMs;
  }

  scan(policy: PoolPolicy, texts: string[]): Promise<ScanReply> {
    return this.#run((ref) => ({ op: 'scan', policy: ref, texts }), policy) as Promise<ScanReply>;
  }

  moderate(policy: PoolPolicy, text: string): Promise<ModerateReply> {
    return this.#run((ref) => ({ op: 'moderate', policy: ref, text }), policy) as Promise<ModerateReply>;
  }

  /** Sends a task built around the policy reference; resends once with the config if the thread has not seen it. */
  async #run(build: (ref: PolicyTask['policy']) => PolicyTask, policy: PoolPolicy): Promise<PolicyReply> {
    const { orgId, version, config } = policy;
    const first = this.#sent.get(orgId) !== version;
    if (first) this.#sent.set(orgId, version);
    let reply = await this.#send(build(first ? { orgId, version, config } : { orgId, version }));
    if (!reply.ok && reply.code === 'config_missing') reply = await this.#send(build({ orgId, version, config }));
    return reply;
  }

  async #send(task: PolicyTask): Promise<PolicyReply> {
    try {
      if (this.#closed) throw new Error('the policy pool is closed');
      return await this.#piscina.run(task, { signal: AbortSignal.timeout(this.#timeoutMs) });
    } catch (err) {
      const failure: PolicyFailure = { ok: false, code: 'policy_failed', message: err instanceof Error ? err.message : String(err) };
      return failure;
    }
  }

  close(): Promise<void> {
    this.#closed = true;
    return this.#piscina.destroy();
  }
}
