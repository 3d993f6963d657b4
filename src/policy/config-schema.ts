// Placeholder until the policy issue lands: per-organisation policy settings.
import { z } from 'zod';

export const orgPolicySchema = z.object({}).passthrough();
export const policySettingsSchema = z.object({}).passthrough();
