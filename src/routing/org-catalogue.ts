// Each organisation's view of the catalogue, compiled once per config: what it
// activated, by id and by alias, in the order resolution prefers (file entries
// before built-ins, then the organisation's own activation order).
import type { FallbackTarget } from '../config/resilience-schema.js';
import type { ModelEntry } from '../domain.js';
import type { Config } from '../config/load-config.js';

export interface OrgCatalogue {
  readonly orgId: string;
  /** Activated chat models, in activation order. */
  readonly chat: readonly ModelEntry[];
  /** Activated models of either type by id; several entries when providers share an id. */
  readonly byId: ReadonlyMap<string, readonly ModelEntry[]>;
  readonly byAlias: ReadonlyMap<string, readonly ModelEntry[]>;
  readonly autoPreference: readonly string[] | undefined;
  /** organizations[].fallbacks: for what `auto` and aliases chose, never for explicit ids. */
  readonly fallbacks?: readonly FallbackTarget[] | undefined;
}

/** The activated chat model `provider`/`model`, as a rule's pin or a fallback names one; undefined when not activated. */
export function activatedChat(cat: OrgCatalogue, provider: string, model: string): ModelEntry | undefined {
  return cat.byId.get(model)?.find((e) => e.provider === provider && e.type === 'chat');
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value); else map.set(key, [value]);
}

export function compileOrgCatalogues(config: Config): ReadonlyMap<string, OrgCatalogue> {
  const out = new Map<string, OrgCatalogue>();
  for (const org of config.organizations.values()) {
    const byId = new Map<string, ModelEntry[]>();
    const byAlias = new Map<string, ModelEntry[]>();
    const chat: ModelEntry[] = [];
    for (const id of new Set(org.models)) {
      for (const entry of config.catalogue) {
        if (entry.id !== id) continue;
        push(byId, id, entry);
        if (entry.type !== 'chat') continue;
        chat.push(entry);
        for (const alias of entry.aliases) push(byAlias, alias, entry);
      }
    }
    out.set(org.id, Object.freeze({ orgId: org.id, chat, byId, byAlias, autoPreference: org.auto_preference, fallbacks: org.fallbacks }));
  }
  return out;
}

/** The gateway's embeddings catalogue by id, for POST /v1/embeddings: no activation needed, so one map serves every organisation. */
export function compileEmbeddingCatalogue(config: Config): ReadonlyMap<string, readonly ModelEntry[]> {
  const out = new Map<string, ModelEntry[]>();
  for (const entry of config.catalogue) if (entry.type === 'embedding') push(out, entry.id, entry);
  return out;
}
