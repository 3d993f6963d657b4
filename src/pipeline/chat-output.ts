// What the non-stream and stream paths both do with a finished completion:
// moderate every choice, settle its usage, and put that usage on the trace.
import type { ChatCompletion, Usage } from '../domain.js';
import { GatewayError } from '../errors.js';
import { chargeable, readUsage } from '../providers/openai-compatible/response.js';
import type { Resolution } from '../routing/resolve-chat.js';
import { costUsd } from '../routing/token-estimate.js';
import { moderatedTexts, outputChars, type StreamAccumulator } from './chat-accumulator.js';
import { choiceTexts, topTexts } from './delta-trails.js';
import type { RequestContext } from './request-context.js';
import type { Services } from './services.js';

/**
 * Buffered moderation: every string of each choice's message a reader is shown
 * (moderatedTexts) and of its other members, and of a stream, what else streamed joined by place
 * (StreamAccumulator.trailTexts); then the answer's own other members, and
 * a stream as a client that reads only each chunk's first choice reads it
 * (StreamAccumulator.firstChoiceTexts). The
 * texts of one choice are joined by a newline, which a reader reads as a space
 * (text-reader.ts): a match that one text ends and the next begins is blocked,
 * which errs on the side of the rule.
 */
export async function moderateChoices(svc: Services, org: string, completion: ChatCompletion, streamed?: StreamAccumulator): Promise<void> {
  const check = async (texts: string[]) => {
    if (texts.length === 0) return;
    const verdict = await svc.policy!.moderate(org, texts.join('\n'));
    if (verdict.blocked) throw new GatewayError('content_blocked', `The output was blocked by moderation (${verdict.category}).`);
  };
  for (const c of completion.choices) {
    const texts = c?.message ? moderatedTexts(c.message) : [];
    // The choice's own other members: a stream's, joined by place as they streamed; a JSON answer's, as they are.
    if (streamed && c) texts.push(...streamed.trailTexts(c.index));
    else if (c) choiceTexts(c, texts);
    await check(texts);
  }
  // The answer's own members beside its choices (citations, search results), read as a choice is.
  const top = topTexts(completion);
  if (streamed) top.push(...streamed.topTrailTexts());
  await check(top);
  if (streamed) await check(streamed.firstChoiceTexts());
}

/** The upstream's usage when it gave one (details and all), else an estimate, so a response always carries usage. */
export function completionUsage(promptTokens: number, completion: ChatCompletion): Usage {
  if (chargeable(completion.usage)) return completion.usage;
  return estimateUsage(promptTokens, outputChars(completion));
}

/** `prompt` is the request's estimate (estimatePromptTokens); output is about four characters a token, as that estimate counts. */
export function estimateUsage(prompt: number, outputChars: number): Usage {
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
