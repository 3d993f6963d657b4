// Turns the caller's `model` into one upstream model. Order: an explicit
// activated model id goes straight to its provider (rules never apply to it);
// then the organisation's routing rules, highest priority first; then the
// catalogue's default aliases and `auto`.
import type { FallbackTarget } from '../config/resilience-schema.js';
import type { ModelEntry } from '../domain.js';
import { GatewayError } from '../errors.js';
import { pickAuto, type Candidate } from './auto-picker.js';
import { activatedChat, type OrgCatalogue } from './org-catalogue.js';

/** A compiled rule as the hot path reads it. */
export interface RuleTarget {
  name: string;
  kind: 'pin' | 'auto';
  provider?: string;
  model?: string;
  /** Pin rules: tried in order when the pinned target fails before the first byte. */
  fallbacks?: readonly FallbackTarget[];
}

/** Returns the first enabled rule matching `requestedModel` for the organisation, if any. */
export type RuleMatcher = (orgId: string, requestedModel: string) => RuleTarget | undefined;

export interface Resolution {
  entry: ModelEntry;
  route_reason: string;
  /** What `auto` considered; empty for other resolutions. */
  candidates: Candidate[];
  /** Targets to try, in order, when `entry` fails before the first byte; absent for explicit model ids. */
  fallbacks?: readonly FallbackTarget[] | undefined;
  /** A rule's pin the organisation has not activated, passed over for its first activated fallback (`entry`). */
  skipped?: FallbackTarget;
}

export interface ResolveInput {
  model: string;
  promptTokens: number;
  maxTokens: number | undefined;
}

export function resolveChat(
  cat: OrgCatalogue,
  input: ResolveInput,
  isConfigured: (provider: string) => boolean,
  matchRule: RuleMatcher,
  /** For `auto`: whether an entry's circuit refuses calls now (see pickAuto). */
  refusing?: (entry: ModelEntry) => boolean,
): Resolution {
  const explicit = cat.byId.get(input.model)?.filter((e) => e.type === 'chat');
  if (explicit?.length) return { entry: firstConfigured(explicit, isConfigured, input.model), route_reason: 'default', candidates: [] };

  const rule = matchRule(cat.orgId, input.model);
  if (rule) {
    const reason = `rule:${rule.name}`;
    if (rule.kind === 'auto') return { ...pickAuto(cat, isConfigured, input.promptTokens, input.maxTokens, refusing), route_reason: reason, fallbacks: cat.fallbacks };
    const entry = activatedChat(cat, rule.provider!, rule.model!);
    if (!entry) {
      // With fallbacks, as with an unconfigured pin, the first the organisation has activated takes the request.
      const fallbacks = rule.fallbacks ?? [];
      for (let i = 0; i < fallbacks.length; i++) {
        const f = fallbacks[i]!;
        const fb = activatedChat(cat, f.provider, f.model);
        if (fb) return { entry: fb, route_reason: reason, candidates: [], fallbacks: fallbacks.slice(i + 1), skipped: { provider: rule.provider!, model: rule.model! } };
      }
      throw new GatewayError('route_target_invalid', `Routing rule "${rule.name}" pins ${rule.provider}/${rule.model}, which this organisation has not activated.`);
    }
    // With fallbacks an unconfigured pin is not an error: the dispatcher skips it, and the trace says so.
    if (!isConfigured(entry.provider) && !rule.fallbacks?.length) {
      throw new GatewayError('route_target_invalid', `Routing rule "${rule.name}" pins ${rule.provider}/${rule.model}, whose provider has no credential mounted.`);
    }
    return { entry, route_reason: reason, candidates: [], fallbacks: rule.fallbacks };
  }

  if (input.model === 'auto') return { ...pickAuto(cat, isConfigured, input.promptTokens, input.maxTokens, refusing), route_reason: 'default', fallbacks: cat.fallbacks };
  const aliased = cat.byAlias.get(input.model);
  if (aliased?.length) return { entry: firstConfigured(aliased, isConfigured, input.model), route_reason: 'default', candidates: [], fallbacks: cat.fallbacks };
  throw new GatewayError('model_not_found', `The model "${input.model}" does not exist or is not activated for this organisation.`, { param: 'model' });
}

function firstConfigured(entries: readonly ModelEntry[], isConfigured: (p: string) => boolean, requested: string): ModelEntry {
  const entry = entries.find((e) => isConfigured(e.provider));
  if (!entry) throw new GatewayError('model_not_configured', `The provider of "${requested}" (${entries[0]!.provider}) has no credential mounted.`, { param: 'model' });
  return entry;
}
