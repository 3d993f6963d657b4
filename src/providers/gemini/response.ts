// Gemini GenerateContentResponse and embedding answers -> ChatResult / EmbeddingsResult.
import type { ChatResult, EmbeddingsResult, Usage } from '../../domain.js';
import { GatewayError } from '../../errors.js';
import { isObj } from '../json-shape.js';


const FINISH: Record<string, string> = {
  STOP: 'stop',
  MAX_TOKENS: 'length',
  SAFETY: 'content_filter',
  RECITATION: 'content_filter',
  BLOCKLIST: 'content_filter',
  PROHIBITED_CONTENT: 'content_filter',
  SPII: 'content_filter',
  IMAGE_SAFETY: 'content_filter',
};

/** Gemini finishReason -> OpenAI finish_reason; OTHER, LANGUAGE and unknown reasons read as a normal stop. */
export function finishReason(reason: unknown): string {
  return (typeof reason === 'string' && FINISH[reason]) || 'stop';
}

/**
 * Thinking models bill `thoughtsTokenCount` as output apart from the
 * candidates; OpenAI counts reasoning inside completion_tokens, so it is added.
 */
export function readUsage(u: unknown): Usage {
  if (!isObj(u)) return { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  const prompt = Number(u.promptTokenCount) || 0;
  const completion = (Number(u.candidatesTokenCount) || 0) + (Number(u.thoughtsTokenCount) || 0);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: Number(u.totalTokenCount) || prompt + completion };
}

/** Concatenated text parts of the first candidate; thought summaries are not answer text. */
export function candidateText(candidate: Record<string, any>): string {
  const parts = candidate.content?.parts;
  let text = '';
  if (Array.isArray(parts)) for (const p of parts) if (typeof p?.text === 'string' && p.thought !== true) text += p.text;
  return text;
}

export function chatResponse(body: unknown): ChatResult {
  if (!isObj(body)) throw new GatewayError('upstream_error', 'The upstream returned no candidates.');
  const candidate = Array.isArray(body.candidates) ? body.candidates[0] : undefined;
  // A blocked prompt has feedback and no candidate: an empty, filtered answer, as OpenAI reports it.
  if (!isObj(candidate)) {
    if (isObj(body.promptFeedback) && body.promptFeedback.blockReason) {
      return { content: '', finish_reason: 'content_filter', usage: readUsage(body.usageMetadata) };
    }
    throw new GatewayError('upstream_error', 'The upstream returned no candidates.');
  }
  return { content: candidateText(candidate), finish_reason: finishReason(candidate.finishReason), usage: readUsage(body.usageMetadata) };
}

/**
 * `{embedding: {values}}` from embedContent or `{embeddings: [{values}]}` from
 * batchEmbedContents, in request order. A missing vector is left out rather
 * than invented, so the pipeline's count check fails the call as incomplete.
 */
export function embeddingsResponse(body: unknown): EmbeddingsResult {
  if (!isObj(body)) throw new GatewayError('upstream_error', 'The upstream returned no embeddings.');
  const items: unknown[] = Array.isArray(body.embeddings) ? body.embeddings : isObj(body.embedding) ? [body.embedding] : [];
  const vectors: number[][] = [];
  for (const it of items) {
    if (!isObj(it) || !Array.isArray(it.values)) throw new GatewayError('upstream_error', 'An embedding item has no float vector.');
    vectors.push(it.values as number[]);
  }
  // The Gemini API reports no token usage for embeddings; counts are read when a deployment sends them.
  const prompt = isObj(body.usageMetadata) ? Number(body.usageMetadata.promptTokenCount) || 0 : 0;
  return { vectors, usage: { prompt_tokens: prompt, total_tokens: prompt } };
}
