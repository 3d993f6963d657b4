// Gemini usageMetadata -> OpenAI usage.
import type { Usage } from '../../domain.js';
import { isObj } from '../json-shape.js';

/**
 * Thinking models bill `thoughtsTokenCount` as output apart from the
 * candidates; OpenAI counts reasoning inside completion_tokens and names it in
 * completion_tokens_details, so it is added and named. promptTokenCount
 * already includes the cached part, as OpenAI's prompt_tokens does.
 */
export function readUsage(u: unknown): Usage {
  if (!isObj(u)) {
    return { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } };
  }
  const prompt = Number(u.promptTokenCount) || 0;
  const thoughts = Number(u.thoughtsTokenCount) || 0;
  const completion = (Number(u.candidatesTokenCount) || 0) + thoughts;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: Number(u.totalTokenCount) || prompt + completion,
    prompt_tokens_details: { cached_tokens: Number(u.cachedContentTokenCount) || 0 },
    completion_tokens_details: { reasoning_tokens: thoughts },
  };
}
