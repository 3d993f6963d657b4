// Buffered output moderation (and non-stream output of chunked-mode
// organisations): the whole text against every rule in one RE2.Set pass.
import type { CompiledPolicy } from './compile.js';
import type { OutputVerdict } from './types.js';

export function moderateText(policy: CompiledPolicy, text: string): OutputVerdict {
  const hit = policy.moderation?.firstRule(text);
  return hit === undefined ? { blocked: false } : { blocked: true, category: hit.category, rule: hit.rule };
}
