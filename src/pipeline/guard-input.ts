// The input guard stage: every string the upstream will see (message-texts.ts
// says which) goes through DLP and the prompt shield in one call, so
// placeholders are numbered consistently across the whole request. The
// caller's objects are never mutated.
import type { ChatMessage } from '../domain.js';
import type { InputScan } from '../policy/types.js';
import type { Services } from './services.js';
import type { RequestContext } from './request-context.js';
import { collectTexts, replaceTexts } from './message-texts.js';

/** Scans `texts`, records the count on the trace, and returns the scan (undefined when no policy engine runs). */
export async function guardTexts(svc: Services, ctx: RequestContext, texts: string[]): Promise<InputScan | undefined> {
  const org = ctx.key!.organization_id;
  if (!svc.policy || !texts.length || !svc.config.organizations.get(org)?.policy) return undefined;
  const scan = await svc.policy.scanInput(org, texts);
  ctx.trace.redactions = scan.redactions;
  return scan;
}

export async function guardMessages(svc: Services, ctx: RequestContext, messages: ChatMessage[]): Promise<{ messages: ChatMessage[]; scan: InputScan | undefined }> {
  const scan = await guardTexts(svc, ctx, collectTexts(messages));
  if (!scan || scan.redactions === 0) return { messages, scan };
  return { messages: replaceTexts(messages, scan.texts), scan };
}
