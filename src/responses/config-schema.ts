// Settings of the Responses API's conversation state (stored responses).
import { z } from 'zod';

export const responsesSettingsSchema = z.object({
  /** Global switch: false stores no response at all, whatever a request or organisation asks. */
  store: z.boolean().default(true),
  /** A stored response (and its input items) is deleted this many days after it was created. */
  retention_days: z.number().int().min(1).max(3650).default(30),
  /** A response whose stored form (input items + response object, as JSON) exceeds this is not stored. */
  max_stored_bytes: z.number().int().min(1024).max(64 * 1024 * 1024).default(1024 * 1024),
  /** How often expired responses are swept. */
  sweep_interval_ms: z.number().int().min(1000).max(86_400_000).default(3_600_000),
}).strict();

export const orgResponsesSchema = z.object({
  /** Per-organisation switch; false stores nothing for this organisation. */
  store: z.boolean().default(true),
}).strict();

export type ResponsesSettings = z.infer<typeof responsesSettingsSchema>;
