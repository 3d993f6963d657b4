import type { ChatCompletion, EmbeddingsResult, Usage } from '../../domain.js';
import { GatewayError } from '../../errors.js';
import { isObj } from '../json-shape.js';

/** The three counts, read defensively; used where the gateway computes from usage (cost, embeddings). */
export function readUsage(u: unknown): Usage {
  if (!isObj(u)) return { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  const prompt = Number(u.prompt_tokens) || 0;
  const completion = Number(u.completion_tokens) || 0;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: Number(u.total_tokens) || prompt + completion };
}

/**
 * The upstream's completion is already the gateway's model: it is returned as
 * parsed, every field kept, after checking the shape the pipeline reads.
 */
export function chatResponse(body: unknown): ChatCompletion {
  if (!isObj(body) || !Array.isArray(body.choices)) throw new GatewayError('upstream_error', 'The upstream returned no choices.');
  for (const c of body.choices) {
    if (!isObj(c) || !isObj(c.message)) throw new GatewayError('upstream_error', 'The upstream returned a choice without a message.');
  }
  return body as ChatCompletion;
}

export function embeddingsResponse(body: unknown): EmbeddingsResult {
  if (!isObj(body) || !Array.isArray(body.data)) throw new GatewayError('upstream_error', 'The upstream returned no embeddings.');
  // OpenAI documents `index` on each item; order by it rather than trusting array order.
  const items = [...body.data].sort((a, b) => (Number(a?.index) || 0) - (Number(b?.index) || 0));
  const vectors = items.map((it) => {
    if (!isObj(it) || !Array.isArray(it.embedding)) throw new GatewayError('upstream_error', 'An embedding item has no float vector.');
    return it.embedding as number[];
  });
  const usage = readUsage(body.usage);
  return { vectors, usage: { prompt_tokens: usage.prompt_tokens, total_tokens: usage.total_tokens || usage.prompt_tokens } };
}
