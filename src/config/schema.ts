// The config file's schema. Parsed once at start-up; every error names the
// field at fault and the rule it broke, and the result is deep-frozen.
import { z } from 'zod';
import { orgPolicySchema, policySettingsSchema } from '../policy/config-schema.js';
import { orgTraceSchema, traceSettingsSchema } from '../traces/config-schema.js';

const providerSchema = z.object({
  kind: z.enum(['openai', 'anthropic', 'gemini', 'mock']),
  base_url: z.url().optional(),
  api_key_env: z.string().min(1).optional(),
  api_key_file: z.string().min(1).optional(),
  /** Self-hosted servers that take no credential are always configured. */
  no_auth: z.boolean().default(false),
}).strict().superRefine((p, ctx) => {
  if (p.kind !== 'mock' && !p.base_url) ctx.addIssue({ code: 'custom', path: ['base_url'], message: 'is required for this provider kind' });
});

const modelSchema = z.object({
  id: z.string().min(1).refine((s) => s !== 'auto', 'must not be "auto", which is reserved'),
  provider: z.string().min(1),
  type: z.enum(['chat', 'embedding']).default('chat'),
  aliases: z.array(z.string().min(1).refine((s) => s !== 'auto', 'must not be "auto"')).default([]),
  context_window: z.number().int().positive(),
  pricing: z.object({ prompt: z.number().nonnegative(), completion: z.number().nonnegative() }).strict(),
}).strict();

const organizationSchema = z.object({
  id: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be 1-64 characters of letters, digits, _ . -'),
  /** Activated model ids: chat models for /v1/models and routing; embedding models a self-hosted server adds. */
  models: z.array(z.string().min(1)).default([]),
  /** Replaces the `auto` picker's cheapest-first policy with a preference order of model ids. */
  auto_preference: z.array(z.string().min(1)).optional(),
  policy: orgPolicySchema.optional(),
}).strict().extend(orgTraceSchema.shape);

export const configSchema = z.object({
  server: z.object({
    host: z.string().default('0.0.0.0'),
    port: z.number().int().min(0).max(65535).default(8080),
    http: z.enum(['auto', 'uws', 'node']).default('auto'),
    body_limit_bytes: z.number().int().positive().default(4 * 1024 * 1024),
    /** Public base URL of this gateway, used to mint signed payload links. */
    public_url: z.url().optional(),
    shutdown_grace_ms: z.number().int().nonnegative().default(15_000),
  }).strict().prefault({}),
  upstream: z.object({
    connect_timeout_ms: z.number().int().positive().default(5_000),
    headers_timeout_ms: z.number().int().positive().default(120_000),
    body_timeout_ms: z.number().int().positive().default(120_000),
    connections_per_origin: z.number().int().positive().default(256),
  }).strict().prefault({}),
  auth: z.object({
    cache_ttl_ms: z.number().int().positive().max(60_000).default(2_000),
    cache_size: z.number().int().positive().default(100_000),
    last_used_flush_ms: z.number().int().positive().default(5_000),
  }).strict().prefault({}),
  redis: z.object({
    key_prefix: z.string().default('sluice:'),
    rules_poll_ms: z.number().int().positive().default(2_000),
  }).strict().prefault({}),
  providers: z.record(z.string().regex(/^[a-z0-9_-]+$/, 'provider names are lower-case letters, digits, _ and -'), providerSchema).default({}),
  models: z.array(modelSchema).default([]),
  organizations: z.array(organizationSchema).default([]),
  policy: policySettingsSchema.optional(),
  traces: traceSettingsSchema.prefault({}),
}).strict();

export type ConfigInput = z.input<typeof configSchema>;
export type RawConfig = z.output<typeof configSchema>;
export type ProviderConfig = z.output<typeof providerSchema>;
export type OrganizationConfig = z.output<typeof organizationSchema>;

/** One line per problem: `organizations.0.models: expected array, received string`. */
export function formatIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`).join('\n');
}
