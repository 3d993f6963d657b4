// OpenAI chat and embeddings bodies -> Gemini API bodies ({base_url}/models/{model}:<method>).
// System (and "developer") messages become `systemInstruction`; "assistant" is
// Gemini's "model" role, and consecutive turns of one role are merged because
// Gemini expects user and model turns to alternate.
import type { ChatRequest, EmbeddingsRequest, UpstreamRequest, UpstreamTarget } from '../../domain.js';
import { GatewayError } from '../../errors.js';
import { rejectUnsupported, textTurns, type TextTurn } from '../text-only-chat.js';
import { joinUrl, type UpstreamUrl } from '../url.js';

/** batchEmbedContents refuses more than 100 requests in one call. */
export const MAX_EMBED_BATCH = 100;

type Part = { text: string };
interface Content { role: 'user' | 'model'; parts: Part[] }

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

function toContents(turns: TextTurn[]): Content[] {
  return turns.map(({ role, texts }): Content => ({ role: role === 'assistant' ? 'model' : 'user', parts: texts.map((text) => ({ text })) }));
}

export function chatRequest(target: UpstreamTarget, req: ChatRequest): UpstreamRequest {
  // Tuning knobs without a safe Gemini equivalent (penalties, logit_bias, user) are dropped, not refused.
  rejectUnsupported(req.raw, 'Gemini', ['text', 'json_object']);
  const { system, turns } = textTurns(req, 'Gemini');
  const contents = toContents(turns);
  const config: Record<string, unknown> = {};
  if (req.temperature !== undefined) config.temperature = req.temperature;
  if (req.top_p !== undefined) config.topP = req.top_p;
  const maxTokens = req.max_tokens ?? (req.raw.max_completion_tokens as number | undefined);
  if (maxTokens !== undefined) config.maxOutputTokens = maxTokens;
  if (req.stop !== undefined) config.stopSequences = typeof req.stop === 'string' ? [req.stop] : req.stop;
  if (req.seed !== undefined) config.seed = req.seed;
  if ((req.raw.response_format as { type?: unknown } | undefined)?.type === 'json_object') config.responseMimeType = 'application/json';

  const body: Record<string, unknown> = { contents };
  if (system.length > 0) body.systemInstruction = { parts: system.map((text): Part => ({ text })) };
  if (Object.keys(config).length > 0) body.generationConfig = config;
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
