// POST /v1/chat/completions, as stages: authenticate, read body, resolve route,
// guard input, (dry run), dispatch, guard output, respond. Errors propagate to
// handle-request.ts, the one place that turns them into replies.
import type { ChatRequest, ChatResult, Usage } from '../domain.js';
import { GatewayError } from '../errors.js';
import type { GatewayRequest, GatewayResponse } from '../http/types.js';
import { resolveChat, type Resolution } from '../routing/resolve-chat.js';
import { costUsd, estimatePromptTokens, estimateTextTokens } from '../routing/token-estimate.js';
import { parseChatRequest } from './chat-request.js';
import { streamChat } from './chat-stream.js';
import { dryRunBody } from './dry-run.js';
import { gatewayBlock } from './gateway-block.js';
import { guardMessages } from './guard-input.js';
import { readJsonObject } from './read-json.js';
import { sendJson } from './reply.js';
import type { RequestContext } from './request-context.js';
import { authenticate, catalogueFor, headerIsTrue, targetFor, type Services } from './services.js';

export async function chatCompletions(svc: Services, ctx: RequestContext, req: GatewayRequest, res: GatewayResponse): Promise<void> {
  await authenticate(svc, ctx, req);
  const chat = parseChatRequest(await readJsonObject(req));
  const org = ctx.key!.organization_id;
  ctx.trace.requested_model = chat.model;
  ctx.trace.streamed = chat.stream;

  const promptTokens = estimatePromptTokens(chat.messages);
  const route = resolveChat(catalogueFor(svc, org), { model: chat.model, promptTokens, maxTokens: chat.max_tokens }, (p) => svc.credentials.isConfigured(p), svc.rules);
  ctx.trace.provider = route.entry.provider;
  ctx.trace.model = route.entry.id;
  ctx.trace.route_reason = route.route_reason;

  const guarded = await guardMessages(svc, ctx, chat.messages);
  const upstreamReq: ChatRequest = { ...chat, messages: guarded.messages };

  if (headerIsTrue(req.headers['gateway-dry-run'])) {
    ctx.trace.dry_run = true;
    ctx.trace.streamed = false;
    ctx.trace.status_code = 200;
    sendJson(res, 200, JSON.stringify(dryRunBody(ctx, chat, route, promptTokens, guarded.scan)), ctx.requestId);
    return;
  }

  const wantBlock = headerIsTrue(req.headers['gateway-trace']);
  const target = targetFor(svc, route.entry);
  if (chat.stream) {
    await streamChat(svc, ctx, res, target, upstreamReq, route, wantBlock);
    return;
  }

  const { result, sent } = await svc.upstream.chat(target, upstreamReq, res.signal);
  const mode = svc.policy?.outputMode(org) ?? 'off';
  if (mode !== 'off') {
    const verdict = await svc.policy!.moderate(org, result.content);
    if (verdict.blocked) throw new GatewayError('content_blocked', `The output was blocked by moderation (${verdict.category}).`);
  }
  recordUsage(ctx, route, result.usage);
  ctx.trace.status_code = 200;
  const body = completionBody(ctx, route, result, wantBlock);
  if (svc.config.organizations.get(org)?.store_payloads) ctx.trace.payload = { request: JSON.parse(sent), response: JSON.parse(body) };
  sendJson(res, 200, body, ctx.requestId);
}

export function recordUsage(ctx: RequestContext, route: Resolution, usage: Usage): void {
  ctx.trace.prompt_tokens = usage.prompt_tokens;
  ctx.trace.completion_tokens = usage.completion_tokens;
  ctx.trace.total_tokens = usage.total_tokens;
  ctx.trace.cost_usd = costUsd(route.entry.pricing, usage.prompt_tokens, usage.completion_tokens);
}

/** Usage when the upstream reported none: estimated, so the final chunk can always carry it. */
export function estimatedUsage(chat: ChatRequest, completionText: string): Usage {
  const prompt = estimatePromptTokens(chat.messages);
  const completion = estimateTextTokens(completionText);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

function completionBody(ctx: RequestContext, route: Resolution, result: ChatResult, wantBlock: boolean): string {
  return JSON.stringify({
    id: `chatcmpl_${ctx.requestId.slice(4)}`,
    object: 'chat.completion',
    created: Math.floor(ctx.startedEpoch / 1000),
    model: route.entry.id,
    choices: [{ index: 0, message: { role: 'assistant', content: result.content }, finish_reason: result.finish_reason }],
    usage: result.usage,
    ...(wantBlock ? { gateway: gatewayBlock(ctx) } : {}),
  });
}
