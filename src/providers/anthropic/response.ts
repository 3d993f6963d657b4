// Anthropic Message object -> ChatResult.
import type { ChatResult, Usage } from '../../domain.js';
import { GatewayError } from '../../errors.js';
import { isObj } from '../json-shape.js';


const FINISH: Record<string, string> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};

/** Anthropic stop_reason -> OpenAI finish_reason; an unknown or absent reason reads as a normal stop. */
export function finishReason(stopReason: unknown): string {
  return (typeof stopReason === 'string' && FINISH[stopReason]) || 'stop';
}

/**
 * Cached prompt tokens are reported apart from `input_tokens`; OpenAI's
 * prompt_tokens counts them, so they are added back in.
 */
export function promptTokens(u: Record<string, any>): number {
  return (Number(u.input_tokens) || 0) + (Number(u.cache_creation_input_tokens) || 0) + (Number(u.cache_read_input_tokens) || 0);
}

export function usageOf(prompt: number, completion: number): Usage {
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

export function chatResponse(body: unknown): ChatResult {
  if (!isObj(body) || !Array.isArray(body.content)) throw new GatewayError('upstream_error', 'The upstream returned no message content.');
  // Only text blocks are translated; thinking and tool_use blocks have no place in a ChatResult.
  let content = '';
  for (const block of body.content) if (isObj(block) && block.type === 'text' && typeof block.text === 'string') content += block.text;
  const u = isObj(body.usage) ? body.usage : {};
  return { content, finish_reason: finishReason(body.stop_reason), usage: usageOf(promptTokens(u), Number(u.output_tokens) || 0) };
}
