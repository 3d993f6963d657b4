// POST /v1/chat/completions, as stages: authenticate, read body, resolve route,
// guard input, (dry run), dispatch, guard output, respond. Errors propagate to
// handle-request.ts, the one place that turns them into replies.
import type { ChatRequest } from '../domain.js';
import { GatewayError } from '../errors.js';
import type { GatewayRequest, GatewayResponse } from '../http/types.js';
import { definitionChars, estimatePromptTokens } from '../routing/token-estimate.js';
import { completionUsage, moderateChoices, recordUsage } from './chat-output.js';
import { parseChatRequest } from './chat-request.js';
import { streamChat } from './chat-stream.js';
import { sendDryRun } from './dry-run.js';
import { gatewayBlock } from './gateway-block.js';
import { keysReadOneWay } from '../providers/json-keys.js';
import { withMembers } from '../providers/json-members.js';
import { guardChat } from './guard-input.js';
import type { ChatTexts } from './message-texts.js';
import { readJsonText } from './read-json.js';
import { sendJson } from './reply.js';
import type { HANDED_OFF, RequestContext } from './request-context.js';
import { authenticate, type Services } from './services.js';
import { gatewayFlags } from './gateway-flags.js';
import { archivesPayloads, dispatchChat, plannedRoute } from './dispatch.js';
import { admitAndRoute } from './limits-stage.js';
import { dropChoiceAlternatives, refuseAlternatives } from './token-alternatives.js';

export async function chatCompletions(svc: Services, ctx: RequestContext, req: GatewayRequest, res: GatewayResponse): Promise<void | typeof HANDED_OFF> {
  // Each stage that can finish at once is awaited only when it did not: an await of a value is a microtask turn.
  const authed = authenticate(svc, ctx, req);
  if (authed) await authed;
  const { dryRun, trace: wantBlock } = gatewayFlags(req);
  const body = await readJsonText(req);
  const chat = parseChatRequest(body.value);
  const org = ctx.key!.organization_id;
  ctx.trace.requested_model = chat.model;

  const promptTokens = estimatePromptTokens(chat.messages, definitionChars(chat.raw));
  const routed = admitAndRoute(svc, ctx, { model: chat.model, promptTokens, maxTokens: chat.max_tokens }, dryRun);
  const route = routed instanceof Promise ? await routed : routed;

  const guarding = guardChat(svc, ctx, chat, body.text);
  const guarded = guarding instanceof Promise ? await guarding : guarding;
  // The request goes as parsed unless DLP replaced texts: a spread copy of it takes V8's slow path
  // (about 1.5 µs). Where it may, it carries the caller's text for the splice.
  chat.rawText = guarded.callerText;
  const upstreamReq: ChatRequest = guarded.messages === chat.messages && guarded.raw === chat.raw ? chat : guardedRequest(chat, guarded);

  if (dryRun) return sendDryRun(ctx, res, { requestedModel: chat.model, route: plannedRoute(svc, ctx.key!.organization_id, route), promptTokens, completionTokens: chat.max_tokens, scan: guarded.scan });

  const mode = svc.policy?.outputMode(org) ?? 'off';
  // Per-token logprobs would show the text a chunked moderation window is still holding back.
  const logprobs = mode === 'chunked' && chat.stream ? asksLogprobs(chat.raw) : undefined;
  if (logprobs) {
    throw new GatewayError('invalid_request', `${logprobs} cannot be streamed for this organisation: its chunked output moderation holds text back. Send stream: false, or no logprobs.`, { param: logprobs });
  }
  refuseAlternatives(mode, chat.raw);
  // Streamed audio speaks its words as they come: no window can hold back sound, only its transcript.
  if (mode === 'chunked' && chat.stream && Array.isArray(chat.raw.modalities) && chat.raw.modalities.includes('audio')) {
    throw new GatewayError('invalid_request', 'audio output cannot be streamed for this organisation: its chunked output moderation holds text back, and sound cannot be. Send stream: false, or text modalities only.', { param: 'modalities' });
  }
  // Returned, not awaited: this frame holds the body, its text and its parse, which a stream must not keep (chat-stream.ts).
  if (chat.stream) return streamChat(svc, ctx, res, upstreamReq, route, wantBlock, promptTokens);

  const { completion, sent, headers, text } = await dispatchChat(svc, ctx, route, upstreamReq, res.signal);
  // Charged before it is moderated: a blocked answer was made, and its provider bills it (docs/limits.md).
  const usage = completionUsage(promptTokens, completion);
  recordUsage(ctx, route, usage);
  if (mode !== 'off') await moderateChoices(svc, org, completion);
  // An upstream's unasked alternatives are emptied: the answer is then written from its parse.
  const dropped = mode !== 'off' && dropChoiceAlternatives(completion.choices);
  ctx.trace.status_code = 200;
  // The upstream's object, every field kept in its order: only what the contract owns is written,
  // into the upstream's own text where there is one (byte for byte otherwise, and no re-serialising).
  const own: Record<string, unknown> = { id: ctx.completionId, model: route.entry.id };
  if (completion.object == null) own.object = 'chat.completion';
  if (completion.created == null) own.created = Math.floor(ctx.startedEpoch / 1000);
  if (completion.usage == null) own.usage = usage;
  if (wantBlock) own.gateway = gatewayBlock(ctx);
  Object.assign(completion, own);
  // Moderation read what JSON.parse kept of a repeated key; the reader's parser may keep the other value (readsOneWay).
  const reply = (text !== undefined && !dropped && (mode === 'off' || keysReadOneWay(text)) ? withMembers(text, own) : undefined) ?? JSON.stringify(completion);
  if (archivesPayloads(svc, org)) ctx.trace.payload = { request: JSON.parse(sent), response: completion };
  sendJson(res, 200, reply, ctx.requestId, headers);
}

/** The request with the texts DLP replaced: its messages, and its own members (a typed copy read by an adapter too). */
function guardedRequest(chat: ChatRequest, guarded: ChatTexts): ChatRequest {
  const out: ChatRequest = { ...chat, messages: guarded.messages, raw: guarded.raw };
  if (guarded.raw !== chat.raw && chat.user !== undefined) out.user = guarded.raw.user as string;
  return out;
}

/**
 * The field that asks for per-token log probabilities, if any. Anything but
 * absent, null or false counts: a server that reads `1` or `"true"` as true
 * (pydantic does) would send them, and so may one given top_logprobs alone.
 */
export function asksLogprobs(raw: Record<string, unknown>): 'logprobs' | 'top_logprobs' | undefined {
  if (raw.logprobs != null && raw.logprobs !== false) return 'logprobs';
  if (raw.top_logprobs != null && raw.top_logprobs !== 0) return 'top_logprobs';
  return undefined;
}
