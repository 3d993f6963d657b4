// A cheap prompt-size estimate for routing decisions (context fit, auto's cost
// ranking, dry-run cost). About four characters per token for English text, plus
// the per-message framing OpenAI documents; never used for billing, which
// always uses the usage the upstream reports.
import type { ChatMessage } from '../domain.js';

const PER_MESSAGE = 4;

export function textOf(content: ChatMessage['content']): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let s = '';
  for (const part of content) if (part && part.type === 'text' && typeof part.text === 'string') s += part.text;
  return s;
}

export function estimatePromptTokens(messages: readonly ChatMessage[]): number {
  let chars = 0;
  for (const m of messages) chars += textOf(m.content).length;
  return Math.ceil(chars / 4) + PER_MESSAGE * messages.length + 2;
}

export const estimateTextTokens = (text: string): number => Math.ceil(text.length / 4);

export function costUsd(pricing: { prompt: number; completion: number }, promptTokens: number, completionTokens: number): number {
  // Pricing is per million tokens; round to a nano-dollar so float noise stays out of JSON.
  return Math.round((promptTokens * pricing.prompt + completionTokens * pricing.completion) * 1000) / 1e9;
}
