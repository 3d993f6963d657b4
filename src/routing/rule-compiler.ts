// Compiles one organisation's rules, given in evaluation order, into the map
// the hot path reads: requested_model -> the first enabled rule that matches.
// Since the only match key is an exact string, "highest priority first, first
// match wins" collapses at compile time into one Map lookup per request.
import type { FallbackTarget } from '../config/resilience-schema.js';
import type { RuleTarget } from './resolve-chat.js';

export interface RuleSource {
  name: string;
  enabled: boolean;
  action_kind: 'pin' | 'auto';
  match: { requested_model: string };
  action: { provider?: string; model?: string; fallbacks?: readonly FallbackTarget[] };
}

export type CompiledRules = ReadonlyMap<string, RuleTarget>;

export function compileRules(ordered: Iterable<RuleSource>): CompiledRules {
  const out = new Map<string, RuleTarget>();
  for (const r of ordered) {
    if (!r.enabled || out.has(r.match.requested_model)) continue;
    const target: RuleTarget = r.action_kind === 'pin'
      ? { name: r.name, kind: 'pin', provider: r.action.provider!, model: r.action.model!, ...(r.action.fallbacks?.length ? { fallbacks: r.action.fallbacks } : {}) }
      : { name: r.name, kind: 'auto' };
    out.set(r.match.requested_model, Object.freeze(target));
  }
  return out;
}
