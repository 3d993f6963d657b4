// Config for retries, circuit breaking, fallbacks and caller limits. Kept out
// of schema.ts so the shared schema only gains the keys that point here.
import { z } from 'zod';

/** Per provider, under providers.NAME.retry. Defaults are on: two retries. */
export const retrySchema = z.object({
  /** Attempts per target, the first one included (3 = two retries). 1 turns retries off. */
  max_attempts: z.number().int().min(1).max(10).default(3),
  base_delay_ms: z.number().int().nonnegative().default(250),
  max_delay_ms: z.number().int().nonnegative().default(4_000),
  /**
   * The request's deadline, when this provider is its first target: no retry, wait or fallback
   * starts past this many ms after the first attempt began, and an attempt still running then is cut off.
   * It bounds a non-streamed answer's whole generation too, so the default matches
   * upstream.headers_timeout_ms: a long JSON completion must not become a 504 that waiting would have avoided.
   */
  deadline_ms: z.number().int().positive().default(120_000),
}).strict();

export const circuitSchema = z.object({
  /** Opens after this many failed calls (each after its retries) in a row... */
  consecutive_failures: z.number().int().min(1).default(10),
  /** ...or when at least `min_requests` calls in one `window_ms` failed at this rate or more. */
  failure_rate: z.number().gt(0).max(1).default(0.5),
  min_requests: z.number().int().min(1).default(20),
  window_ms: z.number().int().positive().default(30_000),
  /** How long an open circuit refuses before it lets one probe through (half-open). */
  open_ms: z.number().int().positive().default(15_000),
}).strict();

export const targetSchema = z.object({ provider: z.string().min(1), model: z.string().min(1) }).strict();
export const MAX_FALLBACKS = 5;
export const fallbacksSchema = z.array(targetSchema).max(MAX_FALLBACKS);

export const budgetSchema = z.object({
  amount: z.number().positive(),
  period: z.enum(['day', 'month']),
}).strict();

/** organizations[].limits; the same shape (minus nulls) is what a key's `limits` holds. */
export const limitsSchema = z.object({
  rpm: z.number().int().positive().optional(),
  tpm: z.number().int().positive().optional(),
  budget_usd: budgetSchema.optional(),
}).strict();

export type RetryPolicy = z.output<typeof retrySchema>;
export type CircuitPolicy = z.output<typeof circuitSchema>;
export type FallbackTarget = z.output<typeof targetSchema>;
export type LimitSpec = z.output<typeof limitsSchema>;

/** A fallback must be a chat model the organisation activated, named by its provider too. */
export function checkOrgFallbacks(
  orgs: ReadonlyArray<{ models: readonly string[]; fallbacks?: readonly FallbackTarget[] | undefined }>,
  catalogue: ReadonlyArray<{ id: string; provider: string; type: string }>,
): string[] {
  const problems: string[] = [];
  orgs.forEach((o, i) => o.fallbacks?.forEach((f, j) => {
    const known = catalogue.some((m) => m.id === f.model && m.provider === f.provider && m.type === 'chat');
    if (!known) problems.push(`organizations.${i}.fallbacks.${j}: no chat model "${f.model}" of provider "${f.provider}"`);
    else if (!o.models.includes(f.model)) problems.push(`organizations.${i}.fallbacks.${j}: "${f.model}" is not an activated model`);
  }));
  return problems;
}
