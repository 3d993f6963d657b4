import type { ChatResult, EmbeddingsResult, Usage } from '../../domain.js';
import { GatewayError } from '../../errors.js';
import { isObj } from '../json-shape.js';


export function readUsage(u: unknown): Usage {
  if (!isObj(u)) return { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  const prompt = Number(u.prompt_tokens) || 0;
  const completion = Number(u.completion_tokens) || 0;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: Number(u.total_tokens) || prompt + completion };
}

export function chatResponse(body: unknown): ChatResult {
  const choice = isObj(body) && Array.isArray(body.choices) ? body.choices[0] : undefined;
  if (!isObj(choice) || !isObj(choice.message)) throw new GatewayError('upstream_error', 'The upstream returned no choices.');
  const content = choice.message.content;
  return {
    content: typeof content === 'string' ? content : '',
    finish_reason: typeof choice.finish_reason === 'string' ? choice.finish_reason : 'stop',
    usage: readUsage((body as Record<string, unknown>).usage),
  };
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
