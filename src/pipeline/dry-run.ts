// The Gateway-Dry-Run answer: how the request would be routed and what DLP
// would substitute (counts by type, never the values). No upstream is called,
// nothing is spent, and the trace says dry_run.
import type { GatewayResponse } from '../http/types.js';
import type { InputScan } from '../policy/types.js';
import { DEFAULT_COMPLETION_ESTIMATE } from '../routing/auto-picker.js';
import type { Resolution } from '../routing/resolve-chat.js';
import { costUsd } from '../routing/token-estimate.js';
import { sendJson } from './reply.js';
import type { RequestContext } from './request-context.js';

export interface DryRun {
  requestedModel: string;
  route: Pick<Resolution, 'entry' | 'route_reason' | 'candidates'>;
  promptTokens: number;
  /** The completion's cap, if the request set one; embeddings make none (0). */
  completionTokens: number | undefined;
  scan: InputScan | undefined;
}

export function sendDryRun(ctx: RequestContext, res: GatewayResponse, d: DryRun): void {
  const completion = d.completionTokens ?? DEFAULT_COMPLETION_ESTIMATE;
  ctx.trace.dry_run = true;
  ctx.trace.streamed = false;
  ctx.trace.status_code = 200;
  sendJson(res, 200, JSON.stringify({
    object: 'route.resolution',
    request_id: ctx.requestId,
    requested_model: d.requestedModel,
    provider: d.route.entry.provider,
    model: d.route.entry.id,
    route_reason: d.route.route_reason,
    candidates: d.route.candidates,
    estimated_prompt_tokens: d.promptTokens,
    estimated_completion_tokens: completion,
    estimated_cost_usd: costUsd(d.route.entry.pricing, d.promptTokens, completion),
    redactions: d.scan?.redactions ?? 0,
    redactions_by_type: d.scan?.byType ?? {},
  }), ctx.requestId);
}
