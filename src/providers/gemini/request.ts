// OpenAI chat and embeddings bodies -> Gemini API bodies ({base_url}/models/{model}:<method>).
// System (and "developer") messages become `systemInstruction`; "assistant" is
// Gemini's "model" role, and consecutive turns of one role are merged because
// Gemini expects user and model turns to alternate.
import type { ChatMessage, ChatRequest, EmbeddingsRequest, UpstreamRequest, UpstreamTarget } from '../../domain.js';
import { GatewayError } from '../../errors.js';
import { joinUrl } from '../url.js';

/** batchEmbedContents refuses more than 100 requests in one call. */
export const MAX_EMBED_BATCH = 100;

type Part = { text: string };
interface Content { role: 'user' | 'model'; parts: Part[] }

/** `models/{id}`, unless the configured id already names its collection (e.g. `tunedModels/…`). */
export function modelName(model: string): string {
  return model.includes('/') ? model : `models/${model}`;
}

function url(target: UpstreamTarget, method: string): URL {
  return joinUrl(target.baseUrl, `${modelName(target.model)}:${method}`);
}

function headers(target: UpstreamTarget): Record<string, string> {
  const h: Record<string, string> = { 'content-type': 'application/json' };
  if (target.apiKey) h['x-goog-api-key'] = target.apiKey;
  return h;
}

/**
 * Fields whose loss would silently change the answer's meaning are refused;
 * tuning knobs without a safe Gemini equivalent (penalties, logit_bias, user)
 * are dropped. The README's provider table lists both.
 */
function rejectUnsupported(raw: Record<string, unknown>): void {
  const refuse = (param: string, what: string) => {
    throw new GatewayError('invalid_request', `${what} is not supported for Gemini models.`, { param });
  };
  if (typeof raw.n === 'number' && raw.n > 1) refuse('n', 'More than one choice (n > 1)');
  if (Array.isArray(raw.tools) && raw.tools.length > 0) refuse('tools', 'Tool calling');
  if (Array.isArray(raw.functions) && raw.functions.length > 0) refuse('functions', 'Function calling');
  if (raw.logprobs === true) refuse('logprobs', 'logprobs');
  if (raw.audio != null) refuse('audio', 'Audio output');
  const format = (raw.response_format as { type?: unknown } | undefined)?.type;
  if (format !== undefined && format !== 'text' && format !== 'json_object') refuse('response_format', `response_format "${String(format)}"`);
}

function partsOf(content: ChatMessage['content']): Part[] {
  if (typeof content === 'string') return content === '' ? [] : [{ text: content }];
  if (content == null) return [];
  const parts: Part[] = [];
  for (const part of content) {
    if (part.type !== 'text') {
      throw new GatewayError('invalid_request', `Content parts of type "${part.type}" are not supported for Gemini models.`, { param: 'messages' });
    }
    if (typeof part.text === 'string' && part.text !== '') parts.push({ text: part.text });
  }
  return parts;
}

function toContents(req: ChatRequest): { system: Part[]; contents: Content[] } {
  const system: Part[] = [];
  const contents: Content[] = [];
  for (const m of req.messages) {
    if (m.role !== 'system' && m.role !== 'developer' && m.role !== 'user' && m.role !== 'assistant') {
      throw new GatewayError('invalid_request', `Messages with role "${m.role}" are not supported for Gemini models.`, { param: 'messages' });
    }
    const parts = partsOf(m.content);
    if (m.role === 'system' || m.role === 'developer') { system.push(...parts); continue; }
    if (parts.length === 0) continue;
    const role = m.role === 'assistant' ? 'model' : 'user';
    const last = contents[contents.length - 1];
    if (last && last.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  }
  if (contents.length === 0) {
    throw new GatewayError('invalid_request', 'At least one user or assistant message is required.', { param: 'messages' });
  }
  return { system, contents };
}

export function chatRequest(target: UpstreamTarget, req: ChatRequest): UpstreamRequest {
  rejectUnsupported(req.raw);
  const { system, contents } = toContents(req);
  const config: Record<string, unknown> = {};
  if (req.temperature !== undefined) config.temperature = req.temperature;
  if (req.top_p !== undefined) config.topP = req.top_p;
  const maxTokens = req.max_tokens ?? (req.raw.max_completion_tokens as number | undefined);
  if (maxTokens !== undefined) config.maxOutputTokens = maxTokens;
  if (req.stop !== undefined) config.stopSequences = typeof req.stop === 'string' ? [req.stop] : req.stop;
  if (req.seed !== undefined) config.seed = req.seed;
  if ((req.raw.response_format as { type?: unknown } | undefined)?.type === 'json_object') config.responseMimeType = 'application/json';

  const body: Record<string, unknown> = { contents };
  if (system.length > 0) body.systemInstruction = { parts: system };
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
