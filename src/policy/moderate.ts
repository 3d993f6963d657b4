// Buffered output moderation (and non-stream output of chunked-mode
// organisations): the whole text against every rule in one RE2.Set pass,
// and its escapes decoded in another where it has any (escaped-view.ts).
import type { CompiledPolicy } from './compile.js';
import { escapedView } from './escaped-view.js';
import type { OutputVerdict } from './types.js';

export function moderateText(policy: CompiledPolicy, text: string): OutputVerdict {
  const rules = policy.moderation;
  if (rules === undefined) return { blocked: false };
  const hit = rules.firstRule(text) ?? (text.includes('\\') ? rules.firstRule(escapedView(text)!.text) : undefined);
  return hit === undefined ? { blocked: false } : { blocked: true, category: hit.category, rule: hit.rule };
}
