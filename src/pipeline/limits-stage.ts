// The limits stage as the pipeline sees it: admit before routing spends any
// work, settle when the request is done. See src/limits/gate.ts.
import { admit, settle } from '../limits/gate.js';
import { resolveChat, type Resolution } from '../routing/resolve-chat.js';
import type { RequestContext } from './request-context.js';
import { catalogueFor, type Services } from './services.js';

/** Undefined (go on at once) or a promise to await: Redis is deciding. */
export function admitRequest(svc: Services, ctx: RequestContext, tokens: number): Promise<void> | undefined {
  const a = admit(svc.limits, { keyId: ctx.key!.id, org: ctx.key!.organization_id }, tokens);
  if (a === undefined) return undefined;
  if (a instanceof Promise) return a.then((x) => { ctx.admission = x; });
  ctx.admission = a;
  return undefined;
}

export function settleRequest(svc: Services, ctx: RequestContext): void {
  settle(svc.limits, ctx.admission!, ctx.trace.total_tokens, ctx.trace.dry_run ? 0 : ctx.trace.cost_usd);
}

type RouteRequest = { model: string; promptTokens: number; maxTokens: number | undefined };

/**
 * Admission, then routing, as chat completions and the Responses API both do:
 * a dry run spends nothing, so no limit or budget applies to it. The route
 * goes on the trace at once, so even a later failure records where it went.
 * A promise only while Redis decides admission: otherwise the route itself.
 */
export function admitAndRoute(svc: Services, ctx: RequestContext, request: RouteRequest, dryRun: boolean): Resolution | Promise<Resolution> {
  const gate = dryRun ? undefined : admitRequest(svc, ctx, request.promptTokens);
  return gate ? gate.then(() => resolveRoute(svc, ctx, request, dryRun)) : resolveRoute(svc, ctx, request, dryRun);
}

function resolveRoute(svc: Services, ctx: RequestContext, request: RouteRequest, dryRun: boolean): Resolution {
  // A dry run is asked about the routing, not this moment's circuits (as plannedRoute): `auto` reads them only for a call.
  const refusing = dryRun ? undefined : svc.deps.refusing;
  const route = resolveChat(catalogueFor(svc, ctx.key!.organization_id), request, (p) => svc.credentials.isConfigured(p), svc.rules, refusing);
  ctx.trace.provider = route.entry.provider;
  ctx.trace.model = route.entry.id;
  ctx.trace.route_reason = route.route_reason;
  return route;
}
