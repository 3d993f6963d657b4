// Trace pipeline and payload archive settings. Validated once at startup; the
// pipeline only ever reads the parsed, frozen result.
import { z } from 'zod';

export const spoolFsyncSchema = z.enum(['always', 'interval', 'never']);

export const traceSettingsSchema = z.object({
  /** Rows per COPY: a batch is flushed when it reaches this size... */
  batch_size: z.number().int().min(1).max(100_000).default(1000),
  /** ...or when its oldest row is this old, whichever comes first. */
  batch_age_ms: z.number().int().min(1).max(60_000).default(200),
  /** Rows held in memory before the buffer spills to the spool. */
  buffer_capacity: z.number().int().min(1).max(10_000_000).default(50_000),
  /** Daily partitions older than this are dropped, payloads with them. */
  retention_days: z.number().int().min(1).max(3650).default(30),
  /** Spool directory; relative paths resolve against the data directory. */
  spool_dir: z.string().min(1).default('trace-spool'),
  /**
   * always: fdatasync after every spooled batch (survives power loss);
   * interval: at most every spool_fsync_interval_ms; never: leave it to the OS
   * (still survives a process crash, since the data is in the page cache).
   */
  spool_fsync: spoolFsyncSchema.default('always'),
  spool_fsync_interval_ms: z.number().int().min(10).max(60_000).default(1000),
  /**
   * How long one batch may take to reach Postgres (partition check, connection, COPY)
   * before it is given up and spooled: a Postgres that accepts connections and never
   * answers must not hold the writer, and the rows behind it, for ever.
   */
  write_timeout_ms: z.number().int().min(100).max(600_000).default(30_000),
  payload_url: z.object({
    /** Name of the environment variable holding the HMAC secret, never the secret itself. */
    secret_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name').default('SLUICE_PAYLOAD_SECRET'),
    ttl_seconds: z.number().int().min(1).max(86_400).default(300),
  }).strict().prefault({}),
}).strict();

export const orgTraceSchema = z.object({ store_payloads: z.boolean().default(false) }).strict();

export type TraceSettings = z.infer<typeof traceSettingsSchema>;
export type OrgTraceSettings = z.infer<typeof orgTraceSchema>;

/** Minimum secret length: an HMAC key shorter than this is guessable offline from one signed URL. */
const MIN_SECRET_LENGTH = 32;

/**
 * Reads the payload URL secret named by `payload_url.secret_env`. Called once at
 * startup: when any organisation stores payloads, a missing or short secret is a
 * configuration error that names the variable, so the gateway refuses to start.
 */
export function resolvePayloadSecret(settings: TraceSettings, env: NodeJS.ProcessEnv, payloadsEnabled: boolean): string | undefined {
  const name = settings.payload_url.secret_env;
  const value = env[name];
  if (!payloadsEnabled) return value && value.length >= MIN_SECRET_LENGTH ? value : undefined;
  if (!value) {
    throw new Error(`traces.payload_url.secret_env: an organisation has store_payloads: true, but the environment variable ${name} is not set`);
  }
  if (value.length < MIN_SECRET_LENGTH) {
    throw new Error(`traces.payload_url.secret_env: the secret in ${name} must be at least ${MIN_SECRET_LENGTH} characters`);
  }
  return value;
}
