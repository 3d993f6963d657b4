// The input guard stage: every string the upstream will see (message-texts.ts
// says which) goes through DLP and the prompt shield in one call, so
// placeholders are numbered consistently across the whole request. The
// caller's objects are never mutated.
import type { ChatMessage } from '../domain.js';
import type { InputScan } from '../policy/types.js';
import type { Services } from './services.js';
import type { RequestContext } from './request-context.js';
import { collectTexts, replaceTexts } from './message-texts.js';

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
 * `unscanned` is true when no policy read the messages: only then may the
 * caller's own text go upstream (the OpenAI-compatible splice). Scanned text
 * must be exactly what is sent, and a caller's text can be read two ways: a key
 * repeated inside a message is its last value to JSON.parse, and may be its
 * first to the upstream's parser, which would carry unscanned text past DLP and
 * the shield. Re-serialising what was scanned leaves one reading.
 */
export async function guardMessages(
  svc: Services, ctx: RequestContext, messages: ChatMessage[],
): Promise<{ messages: ChatMessage[]; scan: InputScan | undefined; unscanned: boolean }> {
  // Without a policy there is nothing to scan: walking every message for its texts would be wasted on the hot path.
  if (!scansInput(svc, ctx.key!.organization_id)) return { messages, scan: undefined, unscanned: true };
  const scan = await guardTexts(svc, ctx, collectTexts(messages));
  if (!scan || scan.redactions === 0) return { messages, scan, unscanned: false };
  return { messages: replaceTexts(messages, scan.texts), scan, unscanned: false };
}
