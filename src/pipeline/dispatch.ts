// The dispatch stage with its resilience: the resolved target and its
// fallbacks, each with retries and a circuit breaker (src/upstream/resilient.ts).
// It writes what happened onto the trace (final provider and model, the
// attempts when there was more than one, fallback_from) and points the
// resolution at the model that answered, so that pricing and the `model`
// field follow it. Rate-limit headers of the caller's own limits are merged here.
import type { FallbackTarget } from '../config/resilience-schema.js';
import type { ChatRequest, EmbeddingsRequest, ModelEntry, PassHeaders, UpstreamAttempt, UpstreamTarget } from '../domain.js';
import type { ClientSignal } from '../http/client-signal.js';
import { rateHeaders } from '../limits/gate.js';
import { activatedChat } from '../routing/org-catalogue.js';
import type { Resolution } from '../routing/resolve-chat.js';
import type { Circuit } from '../upstream/circuit.js';
import { runChain, type ChainDeps } from '../upstream/resilient.js';
import type { ChatOutcome } from '../upstream/upstream.js';
import type { StreamOutcome } from '../upstream/stream-batches.js';
import type { RequestContext } from './request-context.js';
import { catalogueFor, targetFor, type Services } from './services.js';

export function chainDeps(svc: Services): ChainDeps {
  return {
    isConfigured: (p) => svc.credentials.isConfigured(p),
    target: (e) => targetFor(svc, e),
    retryPolicy: (p) => svc.config.providers.get(p)!.retry,
    circuit,
    refusing: (e) => circuit(e)?.refusing() === true,
  };
  /** An entry's circuit, by its provider and origin (targetFor's base URL); the in-process mock has none. */
  function circuit(e: ModelEntry): Circuit | undefined {
    const p = svc.config.providers.get(e.provider)!;
    return p.kind === 'mock' ? undefined : svc.circuits.get(e.provider, p.base_url ?? '');
  }
}

/**
 * The resolved entry, then each activated fallback once; a fallback the organisation has not
 * activated is left out, and so, after `auto`, is one the picker found too small for the
 * request (it was tried, and its answer would have been the provider's context-length 400).
 */
function chainOf(svc: Services, org: string, route: Resolution): ModelEntry[] {
  const chain = [route.entry];
  if (!route.fallbacks?.length) return chain;
  const cat = catalogueFor(svc, org);
  const tooSmall = (e: ModelEntry) => route.candidates.some((c) => !c.fits && c.provider === e.provider && c.model === e.id);
  for (const f of route.fallbacks) {
    const e = activatedChat(cat, f.provider, f.model);
    if (e && !chain.includes(e) && !tooSmall(e)) chain.push(e);
  }
  return chain;
}

/**
 * The entry a call would start with, as a dry run reports it: the first of the chain whose
 * provider has a credential, as the chain skips the others. Circuits are left out: they
 * change from one moment to the next, and a dry run is asked about the routing.
 */
export function plannedRoute(svc: Services, org: string, route: Resolution): Resolution {
  const entry = chainOf(svc, org, route).find((e) => svc.credentials.isConfigured(e.provider));
  return entry && entry !== route.entry ? { ...route, entry } : route;
}

function record(ctx: RequestContext, attempts: UpstreamAttempt[], first: ModelEntry, answered?: ModelEntry, skipped?: FallbackTarget): void {
  // Whenever something other than one clean attempt happened: a lone skip or failure is told too.
  if (attempts.length > 1 || (attempts.length === 1 && attempts[0]!.status !== 200)) ctx.trace.attempts = attempts;
  if (answered && (answered !== first || skipped)) {
    ctx.trace.fallback_from = skipped ? `${skipped.provider}/${skipped.model}` : `${first.provider}/${first.id}`;
    ctx.trace.provider = answered.provider;
    ctx.trace.model = answered.id;
  }
}

async function run<T>(
  svc: Services, ctx: RequestContext, chain: ModelEntry[], signal: ClientSignal, op: (t: UpstreamTarget, signal: ClientSignal) => Promise<T>, skipped?: FallbackTarget,
): Promise<{ value: T; entry: ModelEntry }> {
  // A pin passed over is a skipped target, as an unconfigured one is: 409, no latency.
  const attempts: UpstreamAttempt[] = skipped ? [{ provider: skipped.provider, model: skipped.model, status: 409, latency_ms: 0 }] : [];
  svc.streams.waiting(ctx, signal);
  try {
    const r = await runChain(svc.deps, chain, signal, op, attempts);
    // Answered: what follows is this request's own work, a stream's cut its SseOut's (open-streams.ts).
    svc.streams.settle(ctx);
    ctx.answered = true;
    record(ctx, attempts, chain[0]!, r.entry, skipped);
    return r;
  } catch (err) {
    record(ctx, attempts, chain[0]!, undefined, skipped);
    throw err;
  }
}

/** Our limits' headers replace the upstream's of the same kind (docs/limits.md). */
function withLimitHeaders(ctx: RequestContext, upstream: PassHeaders): PassHeaders {
  return ctx.admission ? rateHeaders(ctx.admission, upstream) : upstream;
}

/** Whether the organisation's traces archive payloads, and so need the body sent upstream: otherwise no call keeps it. */
export function archivesPayloads(svc: Services, org: string): boolean {
  return svc.config.organizations.get(org)?.store_payloads === true;
}

export async function dispatchChat(svc: Services, ctx: RequestContext, route: Resolution, req: ChatRequest, signal: ClientSignal): Promise<ChatOutcome> {
  const org = ctx.key!.organization_id;
  const keepSent = archivesPayloads(svc, org);
  const { value, entry } = await run(svc, ctx, chainOf(svc, org, route), signal, (t, s) => svc.upstream.chat(t, req, s, keepSent), route.skipped);
  route.entry = entry;
  // The outcome is this request's own: set in place, since a spread copy of it takes V8's slow path.
  value.headers = withLimitHeaders(ctx, value.headers);
  return value;
}

/** Resolves with an upstream's first event: retries and fallbacks end there, before any byte reaches the caller. */
export async function dispatchStream(svc: Services, ctx: RequestContext, route: Resolution, req: ChatRequest, signal: ClientSignal): Promise<StreamOutcome> {
  const org = ctx.key!.organization_id;
  const keepSent = archivesPayloads(svc, org);
  const { value, entry } = await run(svc, ctx, chainOf(svc, org, route), signal, (t, s) => svc.upstream.chatStream(t, req, s, keepSent), route.skipped);
  route.entry = entry;
  value.headers = withLimitHeaders(ctx, value.headers);
  return value;
}

/** Embeddings are never routed, so they have no fallbacks; retries and the circuit still apply. */
export async function dispatchEmbeddings(svc: Services, ctx: RequestContext, entry: ModelEntry, req: EmbeddingsRequest, signal: ClientSignal) {
  const keepSent = archivesPayloads(svc, ctx.key!.organization_id);
  const { value } = await run(svc, ctx, [entry], signal, (t, s) => svc.upstream.embeddings(t, req, s, keepSent));
  value.headers = withLimitHeaders(ctx, value.headers);
  return value;
}

/**
 * A native Responses call: retries and the circuit apply; fallbacks do not,
 * since another provider would not speak the Responses API.
 */
export async function dispatchNative<T extends { headers: PassHeaders }>(
  svc: Services, ctx: RequestContext, route: Resolution, signal: ClientSignal, op: (t: UpstreamTarget, signal: ClientSignal) => Promise<T>,
): Promise<T> {
  const { value } = await run(svc, ctx, [route.entry], signal, op);
  return { ...value, headers: withLimitHeaders(ctx, value.headers) };
}

/**
 * A call about something one provider holds for the gateway (a native
 * response it stores): retries and the circuit apply; fallbacks do not, since
 * no other provider holds it.
 */
export async function dispatchHeld<T>(
  svc: Services, ctx: RequestContext, entry: ModelEntry, signal: ClientSignal, op: (t: UpstreamTarget, signal: ClientSignal) => Promise<T>,
): Promise<T> {
  return (await run(svc, ctx, [entry], signal, op)).value;
}
