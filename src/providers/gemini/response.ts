// Gemini GenerateContentResponse and embedding answers -> ChatCompletion / EmbeddingsResult.
import type { ChatCompletion, Choice, EmbeddingsResult } from '../../domain.js';
import { GatewayError } from '../../errors.js';
import { isObj } from '../json-shape.js';
import { noteOrder } from '../answer-order.js';
import { finishReason, readParts, toolCall, toolCallId } from './candidates.js';
import { readUsage } from './usage.js';

function choice(candidate: Record<string, any>, position: number, responseId: unknown): Choice {
  const index = typeof candidate.index === 'number' ? candidate.index : position;
  const { text, reasoning, calls, order } = readParts(candidate);
  const toolCalls = calls.map((p, k) => toolCall(p, toolCallId(p, responseId, index, k)));
  // OpenAI leaves content null beside tool calls, and a string otherwise.
  const message: Choice['message'] = { role: 'assistant', content: text === '' && toolCalls.length > 0 ? null : text };
  if (reasoning) message.reasoning_content = reasoning;
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  noteOrder(message, order);
  return { index, message, finish_reason: finishReason(candidate.finishReason, toolCalls.length > 0) };
}

/** One choice per candidate; a prompt Gemini blocked has no candidate and reads as one empty, filtered choice, as OpenAI reports it. */
export function chatResponse(body: unknown): ChatCompletion {
  if (!isObj(body)) throw new GatewayError('upstream_error', 'The upstream returned no candidates.');
  const candidates: unknown[] = Array.isArray(body.candidates) ? body.candidates : [];
  let choices: Choice[];
  if (candidates.length > 0) {
    choices = candidates.map((c, i) => {
      if (!isObj(c)) throw new GatewayError('upstream_error', 'The upstream returned a malformed candidate.');
      return choice(c, i, body.responseId);
    });
  } else if (isObj(body.promptFeedback) && body.promptFeedback.blockReason) {
    choices = [{ index: 0, message: { role: 'assistant', content: '' }, finish_reason: 'content_filter' }];
  } else {
    throw new GatewayError('upstream_error', 'The upstream returned no candidates.');
  }
  const completion: ChatCompletion = {
    id: typeof body.responseId === 'string' ? `chatcmpl-${body.responseId}` : undefined,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: typeof body.modelVersion === 'string' ? body.modelVersion : undefined,
    choices,
    // No usageMetadata is no usage: the gateway then charges and reports its estimate, not 0 (a free call).
    usage: isObj(body.usageMetadata) ? readUsage(body.usageMetadata) : undefined,
  };
  if (completion.usage === undefined) delete completion.usage;
  if (completion.id === undefined) delete completion.id;
  if (completion.model === undefined) delete completion.model;
  return completion;
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
