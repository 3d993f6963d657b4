// POST /v1/responses, as stages: authenticate, read body, read the conversation
// behind previous_response_id (its size counts for limits and routing), resolve route, guard
// input (instructions, every input item's texts, tool outputs included, and every other member that may hold caller text),
// (dry run), then the native path for providers with a Responses API or the
// translated path through the chat adapters for every other.
import { GatewayError } from '../errors.js';
import type { GatewayRequest, GatewayResponse } from '../http/types.js';
import { collectInputTexts, replaceInputTexts } from '../responses/input-texts.js';
import { parseResponsesRequest } from '../responses/request-parse.js';
import { asksLogprobs } from './chat-completions.js';
import { plannedRoute } from './dispatch.js';
import { sendDryRun } from './dry-run.js';
import { guardTexts, scansInput } from './guard-input.js';
import { admitAndRoute } from './limits-stage.js';
import { readJsonText } from './read-json.js';
import type { HANDED_OFF, RequestContext } from './request-context.js';
import { storingAllowed, type Prepared } from './responses-common.js';
import { chainItems, resolveReferences } from './responses-conversation.js';
import { definitionChars, mediaChars } from '../routing/token-estimate.js';
import { keysReadOneWay } from '../providers/json-keys.js';
import { withSource } from '../policy/text-walk.js';
import { nativeResponse } from './responses-native.js';
import { translatedResponse } from './responses-translated.js';
import { refuseAlternatives } from './token-alternatives.js';
import { authenticate, type Services } from './services.js';
import { gatewayFlags } from './gateway-flags.js';

export async function createResponse(svc: Services, ctx: RequestContext, req: GatewayRequest, res: GatewayResponse): Promise<void | typeof HANDED_OFF> {
  const authed = authenticate(svc, ctx, req);
  if (authed) await authed;
  const { dryRun, trace: wantBlock } = gatewayFlags(req);
  const body = await readJsonText(req);
  const r = parseResponsesRequest(body.value, body.text);
  const org = ctx.key!.organization_id;
  ctx.trace.requested_model = r.model;

  // The conversation behind previous_response_id is prompt too (the upstream reads all of it, on either path),
  // so limits and `auto` must count it. Read once here, and handed to the path that would read it again.
  const chain = r.previous_response_id ? await svc.responses.chain(org, r.previous_response_id) : undefined;
  const history = chain ? chainItems(chain) : [];
  // What an item_reference names is this organisation's, or a 404; and prompt, read and counted as the rest of the input.
  const resolved = await resolveReferences(svc, org, r.input);
  // The request's other members are walked only for a policy: their strings are neither prompt nor free to walk.
  // A policy reads the conversation it goes upstream with as it reads the input: the model's earlier answers were
  // moderated, never scanned as input, and a caller sending them back by hand would have them scanned.
  const scanning = scansInput(svc, org);
  const input = { instructions: r.instructions, items: scanning ? [...history, ...resolved.items] : resolved.items, raw: scanning ? r.raw : undefined };
  // A number JSON.parse rounded is read as the body writes it too, as the native upstream is sent it (text-walk.ts).
  const { texts, groups } = withSource(body.text, () => collectInputTexts(input));
  const counted = scanning ? texts : [...texts, ...collectInputTexts({ instructions: undefined, items: history }).texts];
  // The same estimate as chat's: about four characters a token, plus framing per item.
  // Tools and schemas are prompt too, and a media part is counted as the provider bills it, not by its URL's length.
  const extra = definitionChars(r.raw) + mediaChars(resolved.items) + mediaChars(history);
  const promptTokens = Math.ceil((counted.reduce((n, t) => n + t.length, 0) + extra) / 4) + 4 * (r.input.length + history.length) + 2;
  const route = await admitAndRoute(svc, ctx, { model: r.model, promptTokens, maxTokens: r.max_output_tokens }, dryRun);

  const scan = await guardTexts(svc, ctx, texts, groups);
  const replaced = scan && scan.redactions > 0 ? withSource(body.text, () => replaceInputTexts(input, scan.texts)) : input;
  // Unchanged and with no reference, the input is the caller's own array: the native path splices the caller's text only then.
  const guarded = replaced === input ? { ...input, items: resolved.items } : { ...replaced, items: replaced.items.slice(history.length) };
  const scannedHistory = replaced !== input ? replaced.items.slice(0, history.length) : [];
  const guardedHistory = scannedHistory.some((it, i) => it !== history[i]) ? scannedHistory : undefined;
  // A member DLP changed (metadata, user, ...) goes on in every use of the request: sent, echoed and stored.
  // The native path then re-serialises the body rather than splice into the caller's text.
  if (guarded.raw && guarded.raw !== r.raw) {
    r.raw = guarded.raw;
    r.text = undefined;
  }

  if (dryRun) return sendDryRun(ctx, res, { requestedModel: r.model, route: plannedRoute(svc, ctx.key!.organization_id, route), promptTokens, completionTokens: r.max_output_tokens, scan });

  const native = svc.config.providers.get(route.entry.provider)?.responses_api === true;
  // Only the native path splices into the caller's text; after a scan, only text that reads one way may go (json-keys.ts).
  if (native && scan && r.text !== undefined && !keysReadOneWay(r.text)) r.text = undefined;
  const mode = svc.policy?.outputMode(org) ?? 'off';
  if (mode === 'chunked' && r.stream) {
    const param = Array.isArray(r.raw.include) && r.raw.include.includes('message.output_text.logprobs') ? 'include' : asksLogprobs(r.raw);
    if (param) throw new GatewayError('invalid_request', 'logprobs cannot be streamed for this organisation: its chunked output moderation holds text back.', { param });
  }
  refuseAlternatives(mode, r.raw);
  const p: Prepared = {
    req: r, items: guarded.items, instructions: guarded.instructions, chain, history: guardedHistory, resolved, route, org, mode,
    wantBlock, store: storingAllowed(svc, org, r.store),
  };
  return native ? nativeResponse(svc, ctx, res, p) : translatedResponse(svc, ctx, res, p);
}
