// The input guard stage: every string the upstream will see that can carry a
// caller's data (message-texts.ts says which) goes through DLP and the prompt
// shield in one call, so placeholders are numbered consistently across the
// whole request. The caller's objects are never mutated.
import type { ChatRequest } from '../domain.js';
import type { InputScan } from '../policy/types.js';
import type { Services } from './services.js';
import type { RequestContext } from './request-context.js';
import { collectTexts, replaceTexts, type ChatTexts } from './message-texts.js';
import { keysReadOneWay } from '../providers/json-keys.js';
import { withSource } from '../policy/text-walk.js';

/** True when the caller's organisation has an input policy to apply. */
export const scansInput = (svc: Services, org: string): boolean => !!svc.policy && !!svc.config.organizations.get(org)?.policy;

/**
 * Scans `texts` (and, joined, each group of them the model reads as one),
 * records the count on the trace, and returns the scan (undefined when no
 * policy engine runs).
 */
export async function guardTexts(svc: Services, ctx: RequestContext, texts: string[], groups?: number[][]): Promise<InputScan | undefined> {
  const org = ctx.key!.organization_id;
  if (!texts.length || !scansInput(svc, org)) return undefined;
  const scan = await svc.policy!.scanInput(org, texts, groups);
  ctx.trace.redactions = scan.redactions;
  return scan;
}

/**
 * The request's messages and members after the scan (the caller's own where
 * nothing changed). `callerText` is the body text when it may go upstream as
 * written (the OpenAI-compatible splice): always where no policy read the
 * request, and after a scan only when the scan changed nothing and the text
 * reads one way (json-keys.ts). A text with a repeated key must not go: the
 * scan read the value JSON.parse keeps, and the upstream's parser may keep
 * the other one, unscanned. Re-serialising what was scanned leaves one reading.
 */
type Guarded = ChatTexts & { scan: InputScan | undefined; callerText: string | undefined };

/** A promise only when a policy reads the request. */
export function guardChat(svc: Services, ctx: RequestContext, chat: ChatRequest, text: string): Guarded | Promise<Guarded> {
  // Without a policy there is nothing to scan: walking every message for its texts would be wasted on the hot path.
  if (!scansInput(svc, ctx.key!.organization_id)) return { messages: chat.messages, raw: chat.raw, scan: undefined, callerText: text };
  return scanChat(svc, ctx, chat, text);
}

async function scanChat(svc: Services, ctx: RequestContext, chat: ChatRequest, text: string): Promise<Guarded> {
  // A number JSON.parse rounded is read as the body writes it too, as the upstream is sent it (text-walk.ts).
  const { texts, groups } = withSource(text, () => collectTexts(chat));
  const scan = await guardTexts(svc, ctx, texts, groups);
  if (!scan || scan.redactions === 0) return { messages: chat.messages, raw: chat.raw, scan, callerText: keysReadOneWay(text) ? text : undefined };
  return { ...withSource(text, () => replaceTexts(chat, scan.texts)), scan, callerText: undefined };
}
