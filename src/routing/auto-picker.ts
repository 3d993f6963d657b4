// The `auto` picker. Candidates are the organisation's activated chat models
// whose provider is configured and whose context window holds the estimated
// prompt plus max_tokens. The default policy picks the lowest estimated cost
// (prompt estimate at the prompt price plus max_tokens, or 256 when unset, at the
// completion price); ties keep activation order. An organisation's
// `auto_preference` replaces that ranking with its own order. The best-ranked
// candidate whose upstream's circuit lets a call through is picked.
import type { ModelEntry } from '../domain.js';
import { GatewayError } from '../errors.js';
import type { OrgCatalogue } from './org-catalogue.js';
import { costUsd } from './token-estimate.js';

export const DEFAULT_COMPLETION_ESTIMATE = 256;

export interface Candidate {
  provider: string;
  model: string;
  estimated_cost_usd: number;
  fits: boolean;
  configured: boolean;
}

export interface AutoPick {
  entry: ModelEntry;
  candidates: Candidate[];
}

export function pickAuto(
  cat: OrgCatalogue,
  isConfigured: (provider: string) => boolean,
  promptTokens: number,
  maxTokens: number | undefined,
  /** Whether an entry's circuit refuses calls now, read without taking its probe; a dry run passes none. */
  refusing?: (entry: ModelEntry) => boolean,
): AutoPick {
  const completion = maxTokens ?? DEFAULT_COMPLETION_ESTIMATE;
  const candidates: Candidate[] = [];
  const usable: { entry: ModelEntry; cost: number; order: number }[] = [];
  cat.chat.forEach((entry, order) => {
    const fits = promptTokens + (maxTokens ?? 0) <= entry.context_window;
    const configured = isConfigured(entry.provider);
    const cost = costUsd(entry.pricing, promptTokens, completion);
    candidates.push({ provider: entry.provider, model: entry.id, estimated_cost_usd: cost, fits, configured });
    if (fits && configured) usable.push({ entry, cost, order });
  });
  if (!usable.length) {
    throw new GatewayError('no_model_available', `No activated, configured model fits about ${promptTokens} prompt tokens plus max_tokens.`);
  }
  const pref = cat.autoPreference;
  const rank = pref
    ? (u: (typeof usable)[number]) => { const i = pref.indexOf(u.entry.id); return i < 0 ? Number.MAX_SAFE_INTEGER : i; }
    : (u: (typeof usable)[number]) => u.cost;
  usable.sort((a, b) => rank(a) - rank(b) || a.order - b.order);
  return { entry: firstAdmitted(usable, refusing), candidates };
}

/**
 * The best-ranked entry whose circuit lets a call through: an open one would refuse it,
 * and without a fallback answer 503 while a healthy candidate sat idle. A half-open
 * circuit with its probe free is not passed over for a closed one: `auto` traffic is
 * what probes it, and passed over it would stay open for good, the cheaper (or
 * preferred) model given up while other traffic never came. That request gets one
 * attempt, as any call that draws a probe does, and the fallbacks back it up. When
 * every circuit refuses, the best-ranked still, so the chain answers its circuit-open
 * 503 as it always did.
 */
function firstAdmitted(usable: readonly { entry: ModelEntry }[], refusing: ((entry: ModelEntry) => boolean) | undefined): ModelEntry {
  if (refusing) for (const u of usable) if (!refusing(u.entry)) return u.entry;
  return usable[0]!.entry;
}
