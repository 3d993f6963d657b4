// Anthropic usage -> OpenAI usage. Cache reads and writes are reported apart
// from input_tokens; OpenAI's prompt_tokens counts them, so they are added
// back, and kept in the details.
import type { Usage } from '../../domain.js';

export interface AnthropicUsage { input: number; cacheRead: number; cacheCreation: number; output: number }

export function readUsage(u: Record<string, any> | undefined, into: AnthropicUsage = { input: 0, cacheRead: 0, cacheCreation: 0, output: 0 }): AnthropicUsage {
  if (!u) return into;
  // In a stream, message_delta repeats only what changed; absent counts keep their earlier value.
  if (u.input_tokens != null) into.input = Number(u.input_tokens) || 0;
  if (u.cache_read_input_tokens != null) into.cacheRead = Number(u.cache_read_input_tokens) || 0;
  if (u.cache_creation_input_tokens != null) into.cacheCreation = Number(u.cache_creation_input_tokens) || 0;
  if (u.output_tokens != null) into.output = Number(u.output_tokens) || 0;
  return into;
}

export function openaiUsage(u: AnthropicUsage): Usage {
  const prompt = u.input + u.cacheRead + u.cacheCreation;
  return {
    prompt_tokens: prompt, completion_tokens: u.output, total_tokens: prompt + u.output,
    prompt_tokens_details: { cached_tokens: u.cacheRead, cache_creation_tokens: u.cacheCreation },
  };
}
