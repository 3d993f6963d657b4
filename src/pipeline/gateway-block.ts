// The `gateway` block of section 2.6, built from the same fields as the trace
// so that the two always agree.
import type { RequestContext } from './request-context.js';

export function gatewayBlock(ctx: RequestContext): Record<string, unknown> {
  const t = ctx.trace;
  return {
    request_id: ctx.requestId,
    provider: t.provider,
    model: t.model,
    route_reason: t.route_reason,
    redactions: t.redactions,
    latency_ms: Math.round(ctx.elapsedMs()),
    cost_usd: t.cost_usd,
    // Only when something other than one clean attempt happened, so the usual block keeps its shape.
    ...(t.attempts ? { attempts: t.attempts } : {}),
    ...(t.fallback_from ? { fallback_from: t.fallback_from } : {}),
  };
}
