// Every message that crosses the thread boundary between the policy engine
// and src/workers/policy.worker.ts. Failures travel as data ({ok:false, code})
// so the main thread decides what a caller sees; a worker never throws.
import type { OrgPolicyConfig } from '../policy/config-schema.js';
import type { InputScan, OutputVerdict } from '../policy/types.js';

/**
 * Which policy to apply. `config` is attached the first time the main thread
 * sends a version; a worker that has not seen that version answers
 * `config_missing` and the main thread resends with the config.
 */
export interface PolicyRef {
  orgId: string;
  version: string;
  config?: OrgPolicyConfig;
}

export type PolicyTask =
  /** `groups`: the texts read as one (reading-units.ts), by index. */
  | { op: 'scan'; policy: PolicyRef; texts: string[]; groups: number[][] }
  | { op: 'moderate'; policy: PolicyRef; text: string };

export type PolicyFailure =
  | { ok: false; code: 'config_missing' }
  /** Anything the worker could not do; the engine maps it to policy_unavailable. */
  | { ok: false; code: 'policy_failed'; message: string };

/**
 * A scan result with unchanged texts sent back as null: most texts have
 * nothing to redact, and a large one would otherwise be copied back whole.
 */
export interface ScanResult extends Omit<InputScan, 'texts'> {
  changed: (string | null)[];
}

export type ScanReply =
  | { ok: true; scan: ScanResult }
  | { ok: false; code: 'prompt_blocked'; rule: string }
  | PolicyFailure;

export type ModerateReply = { ok: true; verdict: OutputVerdict } | PolicyFailure;

export type PolicyReply = ScanReply | ModerateReply;
