// What the non-stream and stream paths both do with a finished completion:
// moderate every choice, settle its usage, and put that usage on the trace.
import type { ChatCompletion, ChatRequest, Usage } from '../domain.js';
import { GatewayError } from '../errors.js';
import { readUsage } from '../providers/openai-compatible/response.js';
import type { Resolution } from '../routing/resolve-chat.js';
import { costUsd, estimatePromptTokens } from '../routing/token-estimate.js';
import { outputChars, outputTexts } from './chat-accumulator.js';
import type { RequestContext } from './request-context.js';
import type { Services } from './services.js';

/**
 * Buffered moderation: every choice's content, refusal and tool-call arguments.
 * The texts of one choice are joined by a newline, so a rule cannot match
 * across two of them as if they were one sentence.
 */
export async function moderateChoices(svc: Services, org: string, completion: ChatCompletion): Promise<void> {
  for (const c of completion.choices) {
    const texts = c?.message ? outputTexts(c.message) : [];
    if (texts.length === 0) continue;
    const verdict = await svc.policy!.moderate(org, texts.join('\n'));
    if (verdict.blocked) throw new GatewayError('content_blocked', `The output was blocked by moderation (${verdict.category}).`);
  }
}

/** The upstream's usage when it gave one (details and all), else an estimate, so a response always carries usage. */
export function completionUsage(chat: ChatRequest, completion: ChatCompletion): Usage {
  if (completion.usage && typeof completion.usage === 'object') return completion.usage;
  return estimateUsage(chat, outputChars(completion));
}

/** About four characters per token, as the router estimates prompts. */
export function estimateUsage(chat: ChatRequest, outputChars: number): Usage {
  const prompt = estimatePromptTokens(chat.messages);
  const completionTokens = Math.ceil(outputChars / 4);
  return { prompt_tokens: prompt, completion_tokens: completionTokens, total_tokens: prompt + completionTokens };
}

export function recordUsage(ctx: RequestContext, route: Resolution, usage: Usage): void {
  // The upstream's object is untrusted: the trace takes only well-formed counts.
  const u = readUsage(usage);
  ctx.trace.prompt_tokens = u.prompt_tokens;
  ctx.trace.completion_tokens = u.completion_tokens;
  ctx.trace.total_tokens = u.total_tokens;
  ctx.trace.cost_usd = costUsd(route.entry.pricing, u.prompt_tokens, u.completion_tokens);
}
