// OpenAI chat and embeddings bodies -> Gemini API bodies ({base_url}/models/{model}:<method>).
// The chat body is assembled from one translator per concern (fields, contents,
// tools, generation config); each refuses what it cannot carry with a 400.
import type { ChatRequest, EmbeddingsRequest, UpstreamRequest, UpstreamTarget } from '../../domain.js';
import { GatewayError } from '../../errors.js';
import { joinUrl, type UpstreamUrl } from '../url.js';
import { toContents } from './contents.js';
import { checkEmbeddingFields, checkFields } from './fields.js';
import { generationConfig } from './generation-config.js';
import { toolConfig, toolDeclarations } from './tools.js';

/** batchEmbedContents refuses more than 100 requests in one call. */
export const MAX_EMBED_BATCH = 100;

/** `models/{id}`, unless the configured id already names its collection (e.g. `tunedModels/…`). */
export function modelName(model: string): string {
  return model.includes('/') ? model : `models/${model}`;
}

function url(target: UpstreamTarget, method: string): UpstreamUrl {
  return joinUrl(target.baseUrl, `${modelName(target.model)}:${method}`);
}

function headers(target: UpstreamTarget): Record<string, string> {
  const h: Record<string, string> = { 'content-type': 'application/json' };
  if (target.apiKey) h['x-goog-api-key'] = target.apiKey;
  return h;
}

/** Always translates `req.messages` (after DLP), never the caller's own `raw.messages`. */
export function chatRequest(target: UpstreamTarget, req: ChatRequest): UpstreamRequest {
  checkFields(req.raw);
  const { systemInstruction, contents } = toContents(req.messages);
  const tools = toolDeclarations(req.raw);
  const toolConf = toolConfig(req.raw, tools);
  const config = generationConfig(req);

  const body: Record<string, unknown> = { contents };
  if (systemInstruction) body.systemInstruction = systemInstruction;
  if (tools) body.tools = tools;
  if (toolConf) body.toolConfig = toolConf;
  if (config) body.generationConfig = config;
  // Without alt=sse Gemini streams one JSON array, which no SSE parser reads.
  const method = req.stream ? 'streamGenerateContent?alt=sse' : 'generateContent';
  return { url: url(target, method), method: 'POST', headers: headers(target), body: JSON.stringify(body) };
}

/**
 * One input goes to embedContent, several to one batchEmbedContents call: the
 * batch answer lists vectors in request order, so input order is kept without
 * fan-out. Gemini has no `user` field; it is dropped.
 */
export function embeddingsRequest(target: UpstreamTarget, req: EmbeddingsRequest): UpstreamRequest {
  if (req.raw) checkEmbeddingFields(req.raw);
  if (req.input.length > MAX_EMBED_BATCH) {
    throw new GatewayError('invalid_request', `Gemini embeds at most ${MAX_EMBED_BATCH} inputs per request.`, { param: 'input' });
  }
  const model = modelName(target.model);
  const one = (text: string): Record<string, unknown> => {
    const r: Record<string, unknown> = { model, content: { parts: [{ text }] } };
    if (req.dimensions !== undefined) r.outputDimensionality = req.dimensions;
    return r;
  };
  const single = req.input.length === 1;
  const body = single ? one(req.input[0]!) : { requests: req.input.map(one) };
  return { url: url(target, single ? 'embedContent' : 'batchEmbedContents'), method: 'POST', headers: headers(target), body: JSON.stringify(body) };
}
