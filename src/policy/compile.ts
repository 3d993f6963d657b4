// Turns a validated policy block into the matchers the hot path reads. Run
// once per organisation and config version on the main thread and once in
// each worker that is sent the same config; the version lets a worker know
// its cached copy is current.
import { createHash } from 'node:crypto';
import { compileDetectors, DETECTORS } from './detectors.js';
import type { CompiledDetector } from './detectors.js';
import { RuleSet, termsSource } from './rule-set.js';
import type { RuleSpec } from './rule-set.js';
import { BUILTIN_SHIELD } from './shield-builtins.js';
import type { OrgPolicyConfig } from './config-schema.js';
import type { OutputMode } from './types.js';

/** What a substitution rule carries: the `byType` key, the placeholder label, an optional fixed replacement. */
export interface Substitution {
  readonly type: string;
  readonly label: string;
  readonly replacement: string | undefined;
}

export interface ModerationRule {
  readonly rule: string;
  readonly category: string;
}

export interface CompiledPolicy {
  readonly version: string;
  readonly detectors: readonly CompiledDetector[];
  /** Custom DLP patterns, term lists and shield rules whose action is `redact`. */
  readonly substitutions: RuleSet<Substitution> | undefined;
  /** Shield rules whose action is `block`; the meta is the rule name. */
  readonly blocks: RuleSet<string> | undefined;
  readonly outputMode: OutputMode;
  readonly moderation: RuleSet<ModerationRule> | undefined;
  /** Characters chunked moderation holds back; see chunked-moderator.ts. */
  readonly window: number;
}

/** A content hash, so equal configs share a version across restarts and threads. */
export function policyVersion(config: OrgPolicyConfig): string {
  return createHash('sha256').update(JSON.stringify(config)).digest('base64url').slice(0, 16);
}

const label = (name: string): string => name.toUpperCase().replace(/[^A-Z0-9]+/g, '_');
const orNone = <M>(specs: RuleSpec<M>[]): RuleSet<M> | undefined => (specs.length > 0 ? new RuleSet(specs) : undefined);

export function compilePolicy(config: OrgPolicyConfig, version = policyVersion(config)): CompiledPolicy {
  const { dlp, shield, moderation } = config;
  const substitutions: RuleSpec<Substitution>[] = [];
  const blocks: RuleSpec<string>[] = [];

  for (const r of [...dlp.custom, ...dlp.terms]) {
    substitutions.push({ source: sourceOf(r), meta: { type: r.name, label: label(r.name), replacement: r.replacement } });
  }
  if (shield.builtin) {
    for (const b of BUILTIN_SHIELD) {
      if (shield.builtin_action === 'block') blocks.push({ source: b.source, meta: b.name });
      else substitutions.push({ source: b.source, meta: { type: 'prompt_injection', label: 'PROMPT_INJECTION', replacement: undefined } });
    }
  }
  for (const r of shield.rules) {
    if (r.action === 'block') blocks.push({ source: sourceOf(r), meta: r.name });
    else substitutions.push({ source: sourceOf(r), meta: { type: r.name, label: label(r.name), replacement: r.replacement } });
  }

  const rules = moderation.rules;
  // The longest match any rule can make: the longest term, or a pattern's
  // declared max_length (the schema requires it in chunked mode). Why the
  // window is that and not one less: chunked-moderator.ts.
  const window = Math.max(0, ...rules.map((r) => r.terms ? Math.max(...r.terms.map((t) => t.length)) : (r.max_length ?? 0)));
  return {
    version,
    detectors: compileDetectors(dlp.detectors === 'all' ? DETECTORS : dlp.detectors),
    substitutions: orNone(substitutions),
    blocks: orNone(blocks),
    outputMode: rules.length === 0 ? 'off' : moderation.mode,
    moderation: orNone(rules.map((r) => ({
      source: sourceOf(r), meta: { rule: r.name, category: r.category },
      ...(r.terms ? { alternatives: r.terms.map((t) => termsSource([t], r.case_sensitive)) } : {}),
    }))),
    window,
  };
}

function sourceOf(r: { pattern?: string | undefined; terms?: string[] | undefined; case_sensitive: boolean }): string {
  return r.pattern ?? termsSource(r.terms ?? [], r.case_sensitive);
}
