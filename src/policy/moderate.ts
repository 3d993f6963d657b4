// Buffered output moderation (and non-stream output of chunked-mode
// organisations): the whole text against every rule in one RE2.Set pass,
// and as its reader reads it in another where that differs (text-reader.ts).
import type { CompiledPolicy } from './compile.js';
import type { RuleSet } from './rule-set.js';
import { outputView } from './text-reader.js';
import type { OutputVerdict } from './types.js';

export function moderateText(policy: CompiledPolicy, text: string): OutputVerdict {
  const rules = policy.moderation;
  if (rules === undefined) return { blocked: false };
  const hit = rules.firstRule(text) ?? viewRule(rules, text);
  return hit === undefined ? { blocked: false } : { blocked: true, category: hit.category, rule: hit.rule };
}

function viewRule<M>(rules: RuleSet<M>, text: string): M | undefined {
  const view = outputView(text);
  return view === undefined ? undefined : rules.firstRule(view.text);
}
