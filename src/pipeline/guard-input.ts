// The input guard stage: every string the upstream will see (message-texts.ts
// says which) goes through DLP and the prompt shield in one call, so
// placeholders are numbered consistently across the whole request. The
// caller's objects are never mutated.
import type { ChatMessage } from '../domain.js';
import type { InputScan } from '../policy/types.js';
import type { Services } from './services.js';
import type { RequestContext } from './request-context.js';
import { collectTexts, replaceTexts } from './message-texts.js';
import { keysReadOneWay } from '../providers/json-keys.js';

/** True when the caller's organisation has an input policy to apply. */
const scansInput = (svc: Services, org: string): boolean => !!svc.policy && !!svc.config.organizations.get(org)?.policy;

/** Scans `texts`, records the count on the trace, and returns the scan (undefined when no policy engine runs). */
export async function guardTexts(svc: Services, ctx: RequestContext, texts: string[]): Promise<InputScan | undefined> {
  const org = ctx.key!.organization_id;
  if (!texts.length || !scansInput(svc, org)) return undefined;
  const scan = await svc.policy!.scanInput(org, texts);
  ctx.trace.redactions = scan.redactions;
  return scan;
}

/**
 * `callerText` is the body text when it may go upstream as written (the
 * OpenAI-compatible splice): always where no policy read the messages, and
 * after a scan only when the scan changed nothing and the text reads one way
 * (json-keys.ts). A text with a repeated key must not go: the scan read the
 * value JSON.parse keeps, and the upstream's parser may keep the other one,
 * unscanned. Re-serialising what was scanned leaves one reading.
 */
type Guarded = { messages: ChatMessage[]; scan: InputScan | undefined; callerText: string | undefined };

/** A promise only when a policy reads the messages. */
export function guardMessages(svc: Services, ctx: RequestContext, messages: ChatMessage[], text: string): Guarded | Promise<Guarded> {
  // Without a policy there is nothing to scan: walking every message for its texts would be wasted on the hot path.
  if (!scansInput(svc, ctx.key!.organization_id)) return { messages, scan: undefined, callerText: text };
  return scanMessages(svc, ctx, messages, text);
}

async function scanMessages(svc: Services, ctx: RequestContext, messages: ChatMessage[], text: string): Promise<Guarded> {
  const scan = await guardTexts(svc, ctx, collectTexts(messages));
  if (!scan || scan.redactions === 0) return { messages, scan, callerText: keysReadOneWay(text) ? text : undefined };
  return { messages: replaceTexts(messages, scan.texts), scan, callerText: undefined };
}
