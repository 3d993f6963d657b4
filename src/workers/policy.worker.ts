// Piscina entry: runs the same pure scan and moderation code as the main
// thread, on policies compiled once per organisation and version and cached
// here for the life of the thread.
import { compilePolicy } from '../policy/compile.js';
import type { CompiledPolicy } from '../policy/compile.js';
import { moderateText } from '../policy/moderate.js';
import { scanTexts } from '../policy/scan-input.js';
import type { PolicyReply, PolicyTask } from './protocol.js';

/** Latest version per organisation; a new version replaces the old, so the cache is bounded by the organisation count. */
const compiled = new Map<string, CompiledPolicy>();

function policyFor(task: PolicyTask): CompiledPolicy | undefined {
  const { orgId, version, config } = task.policy;
  const cached = compiled.get(orgId);
  if (cached?.version === version) return cached;
  if (config === undefined) return undefined;
  const fresh = compilePolicy(config, version);
  compiled.set(orgId, fresh);
  return fresh;
}

export default function run(task: PolicyTask): PolicyReply {
  try {
    const policy = policyFor(task);
    if (policy === undefined) return { ok: false, code: 'config_missing' };
    if (task.op === 'moderate') return { ok: true, verdict: moderateText(policy, task.text) };
    const outcome = scanTexts(policy, task.texts, task.groups);
    if (outcome.blocked) return { ok: false, code: 'prompt_blocked', rule: outcome.rule };
    const { texts, redactions, byType } = outcome.scan;
    return { ok: true, scan: { changed: texts.map((t, i) => (t === task.texts[i] ? null : t)), redactions, byType } };
  } catch (err) {
    return { ok: false, code: 'policy_failed', message: err instanceof Error ? err.message : String(err) };
  }
}
