// Placeholder until the trace issue lands: trace pipeline and payload archive settings.
import { z } from 'zod';

export const traceSettingsSchema = z.object({}).passthrough();
export const orgTraceSchema = z.object({ store_payloads: z.boolean().default(false) });
