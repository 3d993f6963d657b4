// The config file's schema. Parsed once at start-up; every error names the
// field at fault and the rule it broke, and the result is deep-frozen.
import { z } from 'zod';
import { orgPolicySchema, policySettingsSchema } from '../policy/config-schema.js';
import { orgResponsesSchema, responsesSettingsSchema } from '../responses/config-schema.js';
import { orgTraceSchema, traceSettingsSchema } from '../traces/config-schema.js';
import { circuitSchema, fallbacksSchema, limitsSchema, retrySchema } from './resilience-schema.js';

const providerSchema = z.object({
  kind: z.enum(['openai', 'anthropic', 'gemini', 'mock']),
  base_url: z.url().optional(),
  api_key_env: z.string().min(1).optional(),
  api_key_file: z.string().min(1).optional(),
  /** Self-hosted servers that take no credential are always configured. */
  no_auth: z.boolean().default(false),
  /**
   * The upstream serves OpenAI's Responses API (POST {base}/responses): /v1/responses
   * is then passed through natively; otherwise it is translated onto chat completions.
   * True only for the built-in `openai` provider unless set.
   */
  responses_api: z.boolean().default(false),
  retry: retrySchema.prefault({}),
}).strict().superRefine((p, ctx) => {
  if (p.kind !== 'mock' && !p.base_url) ctx.addIssue({ code: 'custom', path: ['base_url'], message: 'is required for this provider kind' });
  if (p.responses_api && p.kind !== 'openai') ctx.addIssue({ code: 'custom', path: ['responses_api'], message: 'is only possible for kind "openai"' });
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
  responses: orgResponsesSchema.optional(),
  /** Tried in order when the target `auto` or an alias chose fails before the first byte (docs/limits.md). */
  fallbacks: fallbacksSchema.optional(),
  limits: limitsSchema.optional(),
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
    /**
     * How long new requests may run their setup in one event-loop turn before the rest wait for
     * later turns (src/pipeline/turn-budget.ts); 0 starts every request at once.
     */
    turn_budget_ms: z.number().nonnegative().max(1_000).default(10),
    /** Gateway threads on one port (uWebSockets.js only); unset means one per available core. */
    threads: z.number().int().min(1).max(256).optional(),
    /**
     * V8's semi-space for each gateway thread or process, in MB, full from its start (src/threads/young-generation.ts).
     * A single gateway in the main process takes node's --max-semi-space-size instead.
     */
    semi_space_mb: z.number().int().min(1).max(256).default(16),
    /** node:http only (uWS's are fixed; docs/operations.md): a request's headers, and its whole head and body, must arrive within these. */
    headers_timeout_ms: z.number().int().positive().default(10_000),
    request_timeout_ms: z.number().int().positive().default(60_000),
    /** node:http only: an idle keep-alive connection is closed after this. */
    idle_timeout_ms: z.number().int().positive().default(65_000),
    /** A response whose socket has not drained for this long (a caller that stopped reading) is aborted. */
    stalled_write_timeout_ms: z.number().int().positive().default(30_000),
  }).strict().superRefine((s, ctx) => {
    // node:http refuses a headers timeout longer than the request timeout.
    if (s.headers_timeout_ms > s.request_timeout_ms) ctx.addIssue({ code: 'custom', path: ['headers_timeout_ms'], message: 'must not exceed server.request_timeout_ms' });
  }).prefault({}),
  upstream: z.object({
    connect_timeout_ms: z.number().int().positive().default(5_000),
    headers_timeout_ms: z.number().int().positive().default(120_000),
    body_timeout_ms: z.number().int().positive().default(120_000),
    /**
     * Concurrent calls per upstream origin, per gateway; unset, none. A model call
     * holds its connection for the whole answer (10-60 s of streaming), so a cap
     * is a queue, not a pool size: past it, calls wait for a connection.
     */
    connections_per_origin: z.number().int().positive().optional(),
    /** A JSON answer or error body over this is cut off with 502 upstream_error. */
    max_response_bytes: z.number().int().positive().default(32 * 1024 * 1024),
    /** One SSE event (or one unterminated line) over this many characters cuts the stream off. */
    max_event_bytes: z.number().int().positive().default(1024 * 1024),
    circuit: circuitSchema.prefault({}),
  }).strict().prefault({}),
  auth: z.object({
    cache_ttl_ms: z.number().int().positive().max(60_000).default(2_000),
    cache_size: z.number().int().positive().default(100_000),
    /** How long past cache_ttl_ms a known key's last good record is served while Postgres is unreachable; 0 turns it off. */
    stale_if_error_ms: z.number().int().nonnegative().max(7 * 24 * 3_600_000).default(24 * 3_600_000),
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
  responses: responsesSettingsSchema.prefault({}),
  telemetry: z.object({
    /**
     * How often, in ms, each event loop's delay is sampled for /metrics (`nodejs_eventloop_lag_*`,
     * one set per gateway thread): a stall much shorter than this can go unseen, and each sample wakes the loop.
     */
    event_loop_resolution_ms: z.number().int().min(1).max(1_000).default(10),
    /** One OpenTelemetry span per traced request, sent over OTLP/HTTP (JSON). Off when absent. */
    otlp: z.object({
      /** The collector's base URL (`/v1/traces` is appended) or the full traces URL. */
      endpoint: z.url().refine((u) => /^https?:/.test(u), 'must be an http(s) URL'),
      headers: z.record(z.string().min(1), z.string()).optional(),
      service_name: z.string().min(1).default('sluice'),
    }).strict().optional(),
  }).strict().prefault({}),
}).strict();

export type ConfigInput = z.input<typeof configSchema>;
export type RawConfig = z.output<typeof configSchema>;
export type ProviderConfig = z.output<typeof providerSchema>;
export type OrganizationConfig = z.output<typeof organizationSchema>;

/** One line per problem: `organizations.0.models: expected array, received string`. */
export function formatIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`).join('\n');
}
