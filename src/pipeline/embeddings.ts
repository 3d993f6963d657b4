// POST /v1/embeddings. Models come from the gateway's embeddings catalogue, or
// are activated by the organisation (a self-hosted server); nothing is routed.
// The upstream is always asked for floats; base64 is encoded here.
import type { ModelEntry } from '../domain.js';
import { GatewayError } from '../errors.js';
import type { GatewayRequest, GatewayResponse } from '../http/types.js';
import { embeddingsBody, expectOneVectorPerInput } from '../providers/embeddings-encoding.js';
import { hasEmbeddings } from '../providers/registry.js';
import { costUsd, estimateTextTokens } from '../routing/token-estimate.js';
import { parseEmbeddingsRequest } from './embeddings-request.js';
import { gatewayBlock } from './gateway-block.js';
import { guardTexts, scansInput } from './guard-input.js';
import { mapOtherMembers } from '../policy/text-walk.js';
import { readJsonObject } from './read-json.js';
import { sendJson } from './reply.js';
import type { RequestContext } from './request-context.js';
import { authenticate, catalogueFor, type Services } from './services.js';
import { gatewayFlags } from './gateway-flags.js';
import { archivesPayloads, dispatchEmbeddings } from './dispatch.js';
import { admitRequest } from './limits-stage.js';
import { sendDryRun } from './dry-run.js';

/** The members that hold no caller text: the input is read on its own. */
const EMBEDDINGS_SETTINGS: ReadonlySet<string> = new Set(['model', 'input', 'encoding_format', 'dimensions']);

function resolveEmbedding(svc: Services, orgId: string, model: string): ModelEntry {
  const activated = catalogueFor(svc, orgId).byId.get(model) ?? [];
  const candidates = [...activated, ...(svc.embeddingModels.get(model) ?? []).filter((e) => !activated.includes(e))];
  if (!candidates.length) throw new GatewayError('model_not_found', `The embedding model "${model}" is not in the catalogue nor activated.`, { param: 'model' });
  const kindOf = (e: ModelEntry) => svc.config.providers.get(e.provider)!.kind;
  const capable = candidates.filter((e) => hasEmbeddings(kindOf(e)));
  if (!capable.length) throw new GatewayError('embeddings_unsupported', `The ${candidates[0]!.provider} provider has no embeddings API.`, { param: 'model' });
  const entry = capable.find((e) => svc.credentials.isConfigured(e.provider));
  if (!entry) throw new GatewayError('model_not_configured', `The provider of "${model}" (${capable[0]!.provider}) has no credential mounted.`, { param: 'model' });
  return entry;
}

export async function embeddings(svc: Services, ctx: RequestContext, req: GatewayRequest, res: GatewayResponse): Promise<void> {
  const authed = authenticate(svc, ctx, req);
  if (authed) await authed;
  // A dry run, as on chat: the contract names only Gateway-Trace here, but a caller who asks for one expects no call and no spend.
  const { dryRun, trace: wantBlock } = gatewayFlags(req);
  const emb = parseEmbeddingsRequest(await readJsonObject(req));
  const org = ctx.key!.organization_id;
  ctx.trace.requested_model = emb.model;
  const promptTokens = emb.input.reduce((n, t) => n + estimateTextTokens(t), 0);
  const gate = dryRun ? undefined : admitRequest(svc, ctx, promptTokens);
  if (gate) await gate;
  const entry = resolveEmbedding(svc, org, emb.model);
  ctx.trace.provider = entry.provider;
  ctx.trace.model = entry.id;
  ctx.trace.route_reason = 'default';

  // For a policy, the input and then every string of the members an OpenAI-compatible upstream is sent as
  // they are (`user`, unknown ones).
  const raw = emb.raw ?? {};
  let texts = emb.input;
  if (scansInput(svc, org)) {
    texts = [...emb.input];
    mapOtherMembers(raw, EMBEDDINGS_SETTINGS, (t) => { texts.push(t); return t; });
  }
  const scan = await guardTexts(svc, ctx, texts);
  if (scan && scan.redactions) {
    emb.input = scan.texts.slice(0, emb.input.length);
    let i = emb.input.length;
    emb.raw = mapOtherMembers(raw, EMBEDDINGS_SETTINGS, () => scan.texts[i++]!);
    if (emb.user !== undefined) emb.user = emb.raw.user as string;
  }

  if (dryRun) return sendDryRun(ctx, res, { requestedModel: emb.model, route: { entry, route_reason: 'default', candidates: [] }, promptTokens, completionTokens: 0, scan });

  const { result, sent, headers } = await dispatchEmbeddings(svc, ctx, entry, emb, res.signal);
  expectOneVectorPerInput(result.vectors, emb.input.length);
  // Some providers (Gemini) report no tokens for embeddings: estimate, so spend is never silently zero.
  const prompt = result.usage.prompt_tokens || emb.input.reduce((n, t) => n + estimateTextTokens(t), 0);
  ctx.trace.prompt_tokens = prompt;
  ctx.trace.total_tokens = prompt;
  ctx.trace.cost_usd = costUsd(entry.pricing, prompt, 0);
  ctx.trace.status_code = 200;
  // The upstream's other members, its items' and its usage details go back as it sent them; model, the counts and the gateway block are ours.
  const rest = JSON.stringify({
    ...result.extra,
    model: entry.id,
    usage: { ...result.usageExtra, prompt_tokens: prompt, total_tokens: prompt },
    ...(wantBlock ? { gateway: gatewayBlock(ctx) } : {}),
  });
  const body = embeddingsBody(result.vectors, emb.encoding_format, `,${rest.slice(1)}`, result.itemExtra);
  if (archivesPayloads(svc, org)) ctx.trace.payload = { request: JSON.parse(sent), response: { model: entry.id, vectors: result.vectors.length, usage: { prompt_tokens: prompt } } };
  sendJson(res, 200, body, ctx.requestId, headers);
}
