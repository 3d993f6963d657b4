// GET /v1/models: the organisation's activated chat models, `auto` first, each
// id once (the entry a pinned call would route to), `configured` live.
import type { ModelEntry } from '../domain.js';
import { GatewayError } from '../errors.js';
import type { GatewayRequest, GatewayResponse } from '../http/types.js';
import { sendJson } from './reply.js';
import type { RequestContext } from './request-context.js';
import { authenticate, catalogueFor, type Services } from './services.js';

/** OpenAI-compatibility `created`: a fixed constant, not a release date (2024-01-01T00:00:00Z). */
export const MODEL_CREATED = 1_704_067_200;

function parseBool(name: string, v: string | null): boolean | undefined {
  if (v === null) return undefined;
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw new GatewayError('invalid_request', `${name} must be true or false.`, { param: name });
}

type ModelObject = Record<string, unknown> & { id: string; provider: string; configured: boolean };

/** The organisation's listing, unfiltered: `auto` first, then each activated chat model once. */
function orgModels(svc: Services, org: string): ModelObject[] {
  const cat = catalogueFor(svc, org);
  const isConfigured = (p: string) => svc.credentials.isConfigured(p);

  // One entry per id: the first configured one, as resolve-chat would pick, else the first.
  const chosen = new Map<string, ModelEntry>();
  for (const e of cat.chat) {
    const prev = chosen.get(e.id);
    if (!prev || (!isConfigured(prev.provider) && isConfigured(e.provider))) chosen.set(e.id, e);
  }
  const models = [...chosen.values()].map((e) => ({
    id: e.id, object: 'model', created: MODEL_CREATED, owned_by: e.provider, provider: e.provider,
    aliases: e.aliases, context_window: e.context_window, pricing: e.pricing, configured: isConfigured(e.provider),
  }));
  const anyConfigured = models.some((m) => m.configured);
  const auto = {
    id: 'auto', object: 'model', created: MODEL_CREATED, owned_by: 'sluice', provider: 'sluice', aliases: [],
    context_window: Math.max(0, ...models.filter((m) => m.configured).map((m) => m.context_window)),
    pricing: { prompt: 0, completion: 0 }, configured: anyConfigured,
  };
  return [auto, ...models];
}

export async function listModels(svc: Services, ctx: RequestContext, req: GatewayRequest, res: GatewayResponse): Promise<void> {
  await authenticate(svc, ctx, req);
  const q = new URLSearchParams(req.query);
  const provider = q.get('provider') ?? undefined;
  const configured = parseBool('configured', q.get('configured'));
  const data = orgModels(svc, ctx.key!.organization_id).filter((m) =>
    (provider === undefined || m.provider === provider) && (configured === undefined || m.configured === configured));
  ctx.trace.status_code = 200;
  sendJson(res, 200, JSON.stringify({ object: 'list', data }), ctx.requestId);
}

/**
 * GET /v1/models/{model}, the openai SDK's `models.retrieve()`: the listing's
 * entry for that id, so that a client checking a model before use sees what
 * the listing shows (an embedding model is not listed, so not found either).
 */
export async function retrieveModel(svc: Services, ctx: RequestContext, req: GatewayRequest, res: GatewayResponse, [id]: string[]): Promise<void> {
  await authenticate(svc, ctx, req);
  const model = orgModels(svc, ctx.key!.organization_id).find((m) => m.id === id);
  if (!model) throw new GatewayError('model_not_found', `The model "${id}" does not exist or is not activated for this organisation.`, { param: 'model' });
  ctx.trace.status_code = 200;
  sendJson(res, 200, JSON.stringify(model), ctx.requestId);
}
