// The policy engine the request pipeline calls: input guarding (shield, DLP)
// and output moderation per organisation. Configs are validated and compiled
// once here; small inputs are scanned inline, large ones on the worker pool,
// and any failure to scan fails the request closed with policy_unavailable.
import { GatewayError } from '../errors.js';
import { PolicyPool } from '../workers/policy-pool.js';
import type { PoolPolicy } from '../workers/policy-pool.js';
import { WindowedModerator } from './chunked-moderator.js';
import { compilePolicy, policyVersion } from './compile.js';
import type { CompiledPolicy } from './compile.js';
import { orgPolicySchema, policySettingsSchema } from './config-schema.js';
import type { OrgPolicyInput, PolicySettings, PolicySettingsInput } from './config-schema.js';
import { moderateText } from './moderate.js';
import { scanTexts } from './scan-input.js';
import type { ScanOutcome } from './scan-input.js';
import type { ChunkedModerator, InputScan, OutputMode, OutputVerdict, PolicyEngine } from './types.js';

/** The slice of a pino logger the engine uses. */
export interface PolicyLogger {
  warn(obj: object, msg: string): void;
}

interface OrgEntry {
  readonly compiled: CompiledPolicy;
  readonly pool: PoolPolicy;
}

/**
 * Builds the engine from validated or raw policy blocks (both are parsed again,
 * which is idempotent). An organisation absent from the map gets the default
 * policy, the same as one whose block is `{}`: every DLP detector and the
 * built-in shield, no moderation.
 */
export function createPolicyEngine(
  orgPolicies: ReadonlyMap<string, OrgPolicyInput> | Readonly<Record<string, OrgPolicyInput>>,
  settings: PolicySettingsInput = {},
  logger?: PolicyLogger,
  /** How many gateways of one instance share `settings.workers` (each starts its own engine). */
  gateways = 1,
): PolicyEngine {
  const parsed = policySettingsSchema.parse(settings);
  const entries = orgPolicies instanceof Map ? [...orgPolicies.entries()] : Object.entries(orgPolicies);
  const orgs = new Map(entries.map(([orgId, input]) => [orgId, entry(orgId, input)]));
  return new Engine(orgs, entry('', {}), { ...parsed, workers: workerShare(parsed.workers, gateways) }, logger);
}

/**
 * `policy.workers` counts scan threads for the instance: each of its gateways
 * starts a pool of its share (at least one), not one of the whole size, so N
 * gateway threads do not start N times the workers (each about 8 MB idle)
 * and oversubscribe the cores they already fill. 0 still scans inline.
 */
function workerShare(workers: number, gateways: number): number {
  return workers === 0 ? 0 : Math.max(1, Math.ceil(workers / gateways));
}

function entry(orgId: string, input: OrgPolicyInput): OrgEntry {
  const result = orgPolicySchema.safeParse(input);
  if (!result.success) {
    const detail = result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`policy of organisation "${orgId}": ${detail}`);
  }
  const config = result.data;
  const version = policyVersion(config);
  return { compiled: compilePolicy(config, version), pool: { orgId, version, config } };
}

class Engine implements PolicyEngine {
  readonly #orgs: ReadonlyMap<string, OrgEntry>;
  readonly #fallback: OrgEntry;
  readonly #threshold: number;
  readonly #pool: PolicyPool | undefined;
  readonly #logger: PolicyLogger | undefined;

  constructor(orgs: ReadonlyMap<string, OrgEntry>, fallback: OrgEntry, settings: PolicySettings, logger?: PolicyLogger) {
    this.#orgs = orgs;
    this.#fallback = fallback;
    this.#threshold = settings.workers > 0 ? settings.offload_threshold_chars : Infinity;
    this.#pool = settings.workers > 0
      ? new PolicyPool({ threads: settings.workers, taskTimeoutMs: settings.task_timeout_ms, maxQueue: settings.max_queue })
      : undefined;
    this.#logger = logger;
  }

  async scanInput(orgId: string, texts: string[], groups: number[][] = []): Promise<InputScan> {
    const org = this.#org(orgId);
    let outcome: ScanOutcome;
    if (this.#pool !== undefined && totalLength(texts) >= this.#threshold) {
      const reply = await this.#pool.scan(org.pool, texts, groups);
      if (reply.ok) {
        const { changed, redactions, byType } = reply.scan;
        outcome = { blocked: false, scan: { texts: changed.map((t, i) => t ?? texts[i]!), redactions, byType } };
      } else if (reply.code === 'prompt_blocked') {
        outcome = { blocked: true, rule: reply.rule };
      } else {
        throw this.#unavailable(orgId, reply.code === 'policy_failed' ? reply.message : reply.code);
      }
    } else {
      outcome = this.#inline(orgId, () => scanTexts(org.compiled, texts, groups));
    }
    if (outcome.blocked) {
      throw new GatewayError('prompt_blocked', `The prompt was blocked by the prompt shield (rule "${outcome.rule}").`);
    }
    return outcome.scan;
  }

  outputMode(orgId: string): OutputMode {
    return this.#org(orgId).compiled.outputMode;
  }

  async moderate(orgId: string, text: string): Promise<OutputVerdict> {
    const org = this.#org(orgId);
    if (org.compiled.moderation === undefined) return { blocked: false };
    if (this.#pool === undefined || text.length < this.#threshold) {
      return this.#inline(orgId, () => moderateText(org.compiled, text));
    }
    const reply = await this.#pool.moderate(org.pool, text);
    if (reply.ok) return reply.verdict;
    throw this.#unavailable(orgId, reply.code === 'policy_failed' ? reply.message : reply.code);
  }

  chunked(orgId: string): ChunkedModerator {
    return new WindowedModerator(this.#org(orgId).compiled);
  }

  ready(): boolean {
    return this.#pool === undefined || this.#pool.ready();
  }

  get workers(): number {
    return this.#pool?.threads ?? 0;
  }

  async close(): Promise<void> {
    await this.#pool?.close();
  }

  #org(orgId: string): OrgEntry {
    return this.#orgs.get(orgId) ?? this.#fallback;
  }

  /** Inline scanning is pure code, but a bug there must fail closed too, never pass text unscanned. */
  #inline<T>(orgId: string, scan: () => T): T {
    try {
      return scan();
    } catch (err) {
      throw this.#unavailable(orgId, err instanceof Error ? err.message : String(err), err);
    }
  }

  #unavailable(orgId: string, reason: string, cause?: unknown): GatewayError {
    this.#logger?.warn({ orgId, reason }, 'policy scan failed; request refused');
    return new GatewayError('policy_unavailable', undefined, { cause: cause ?? new Error(reason) });
  }
}

function totalLength(texts: readonly string[]): number {
  let n = 0;
  for (const t of texts) n += t.length;
  return n;
}
