// The Gateway-Dry-Run answer: how the request would be routed and what DLP
// would substitute (counts by type, never the values). No upstream is called.
import type { ChatRequest } from '../domain.js';
import type { InputScan } from '../policy/types.js';
import { DEFAULT_COMPLETION_ESTIMATE } from '../routing/auto-picker.js';
import type { Resolution } from '../routing/resolve-chat.js';
import { costUsd } from '../routing/token-estimate.js';
import type { RequestContext } from './request-context.js';

export function dryRunBody(ctx: RequestContext, chat: ChatRequest, route: Resolution, promptTokens: number, scan: InputScan | undefined) {
  const completion = chat.max_tokens ?? DEFAULT_COMPLETION_ESTIMATE;
  return {
    object: 'route.resolution',
    request_id: ctx.requestId,
    requested_model: chat.model,
    provider: route.entry.provider,
    model: route.entry.id,
    route_reason: route.route_reason,
    candidates: route.candidates,
    estimated_prompt_tokens: promptTokens,
    estimated_completion_tokens: completion,
    estimated_cost_usd: costUsd(route.entry.pricing, promptTokens, completion),
    redactions: scan?.redactions ?? 0,
    redactions_by_type: scan?.byType ?? {},
  };
}
