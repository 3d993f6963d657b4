// The policy block of one organisation (`organizations[].policy` in YAML) and
// the engine-wide settings. Every pattern is compiled here, at config load, so
// a pattern RE2 rejects is a config error naming its rule, never a request error.
import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { DETECTORS } from './detectors.js';
import { matchesEmpty, re2Error, termsSource } from './rule-set.js';

/** Longest match a chunked-moderation rule may declare: the held-back window, so it bounds TTFB and memory. */
export const MAX_WINDOW = 4096;

const ruleName = z.string().regex(/^[A-Za-z][A-Za-z0-9_.-]{0,63}$/, 'a letter, then letters, digits, "_", "." or "-" (max 64)');
const term = z.string().min(1).max(MAX_WINDOW);
const terms = z.array(term).min(1).max(10_000);

interface Matchable { name: string; pattern?: string | undefined; terms?: string[] | undefined; case_sensitive?: boolean }

/** Exactly one of `pattern` / `terms`, and it must compile under RE2. */
function checkMatchable(rule: Matchable, ctx: z.RefinementCtx): void {
  if ((rule.pattern === undefined) === (rule.terms === undefined)) {
    ctx.addIssue({ code: 'custom', message: `rule "${rule.name}": give exactly one of "pattern" or "terms"` });
    return;
  }
  const source = rule.pattern ?? termsSource(rule.terms!, rule.case_sensitive ?? false);
  const path = rule.pattern === undefined ? 'terms' : 'pattern';
  const err = re2Error(source);
  if (err !== undefined) {
    ctx.addIssue({ code: 'custom', path: [path], message: `rule "${rule.name}": ${path} does not compile under RE2: ${err}` });
  } else if (matchesEmpty(source)) {
    // An empty match would block every output or substitute nothing everywhere.
    ctx.addIssue({ code: 'custom', path: [path], message: `rule "${rule.name}": ${path} matches the empty string` });
  }
}

function uniqueNames(rules: readonly { name: string }[], ctx: z.RefinementCtx): void {
  const seen = new Set<string>();
  rules.forEach((r, i) => {
    if (seen.has(r.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `rule "${r.name}" is defined twice` });
    seen.add(r.name);
  });
}

/** DLP substitution rules. Without `replacement`, a match becomes a numbered placeholder such as [PROJECT_CODE_1]. */
const dlpRule = z.object({
  name: ruleName,
  pattern: z.string().min(1).max(MAX_WINDOW).optional(),
  terms: terms.optional(),
  case_sensitive: z.boolean().default(false),
  replacement: z.string().max(256).optional(),
}).strict().superRefine(checkMatchable);

const dlpSchema = z.object({
  detectors: z.union([z.literal('all'), z.array(z.enum(DETECTORS))]).default('all'),
  /** RE2 patterns. */
  custom: z.array(dlpRule.refine((r) => r.pattern !== undefined, 'custom rules take "pattern"; use "terms" for term lists')).default([]).superRefine(uniqueNames),
  /** Term lists. */
  terms: z.array(dlpRule.refine((r) => r.terms !== undefined, 'term rules take "terms"')).default([]).superRefine(uniqueNames),
}).strict();

const shieldRule = z.object({
  name: ruleName,
  pattern: z.string().min(1).max(MAX_WINDOW).optional(),
  terms: terms.optional(),
  case_sensitive: z.boolean().default(false),
  action: z.enum(['block', 'redact']).default('block'),
  replacement: z.string().max(256).optional(),
}).strict().superRefine(checkMatchable);

const shieldSchema = z.object({
  builtin: z.boolean().default(true),
  builtin_action: z.enum(['block', 'redact']).default('block'),
  rules: z.array(shieldRule).default([]).superRefine(uniqueNames),
}).strict();

const moderationRule = z.object({
  name: ruleName,
  category: z.string().min(1).max(64),
  pattern: z.string().min(1).max(MAX_WINDOW).optional(),
  terms: terms.optional(),
  case_sensitive: z.boolean().default(false),
  /** Longest text the pattern must catch in chunked mode: the window held back from the stream. */
  max_length: z.number().int().min(1).max(MAX_WINDOW).optional(),
}).strict().superRefine(checkMatchable);

const moderationSchema = z.object({
  mode: z.enum(['buffered', 'chunked']).default('buffered'),
  rules: z.array(moderationRule).default([]).superRefine(uniqueNames),
}).strict().superRefine((m, ctx) => {
  // A pattern's longest match cannot be read off RE2 in general, so chunked
  // mode needs it declared; without it the window would be unbounded.
  if (m.mode !== 'chunked') return;
  m.rules.forEach((r, i) => {
    if (r.pattern !== undefined && r.max_length === undefined) {
      ctx.addIssue({ code: 'custom', path: ['rules', i, 'max_length'], message: `rule "${r.name}": chunked mode needs "max_length" on every pattern rule` });
    }
  });
});

export const orgPolicySchema = z.object({
  dlp: dlpSchema.prefault({}),
  shield: shieldSchema.prefault({}),
  moderation: moderationSchema.prefault({}),
}).strict();

export const policySettingsSchema = z.object({
  /** Inputs (total UTF-16 length of a request's texts) at or above this go to the worker pool; see bench/policy-offload.ts. */
  offload_threshold_chars: z.number().int().min(0).default(16_384),
  /** Pool threads; 0 scans everything inline. */
  workers: z.number().int().min(0).max(64).default(availableParallelism()),
  /** A pool task slower than this fails the request with policy_unavailable. */
  task_timeout_ms: z.number().int().min(1).default(2_000),
  /** Tasks waiting for a thread beyond this fail fast with policy_unavailable rather than queue without bound. */
  max_queue: z.number().int().min(1).default(1_024),
}).strict();

export type OrgPolicyInput = z.input<typeof orgPolicySchema>;
export type OrgPolicyConfig = z.output<typeof orgPolicySchema>;
export type PolicySettingsInput = z.input<typeof policySettingsSchema>;
export type PolicySettings = z.output<typeof policySettingsSchema>;
