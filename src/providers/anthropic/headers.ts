// Anthropic's rate-limit headers under OpenAI's names, so an SDK that paces
// itself on x-ratelimit-* reads them as it would from OpenAI. Anthropic gives
// reset times as RFC 3339 instants; OpenAI gives durations ("1s", "6m0s").
import type { PassHeaders } from '../../domain.js';
import type { AnswerHead } from '../../upstream/h1/answer-head.js';

/** An instant as OpenAI's duration from now: "20ms", "1s", "6m0s"; never negative. */
export function durationUntil(instant: string, now = Date.now()): string | undefined {
  const at = Date.parse(instant);
  if (Number.isNaN(at)) return undefined;
  const ms = Math.max(0, at - now);
  if (ms < 1000) return `${ms}ms`;
  const s = Math.ceil(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${s % 60}s`;
}

interface LimitNames { limit: string; remaining: string; reset: string }

/**
 * Built once: names built from templates at every answer were new strings,
 * hashed again by each lookup of them (the server's table of encoded header names).
 */
const anthropicNames = (kind: string): LimitNames => ({
  limit: `anthropic-ratelimit-${kind}-limit`, remaining: `anthropic-ratelimit-${kind}-remaining`, reset: `anthropic-ratelimit-${kind}-reset`,
});
const openaiNames = (kind: string): LimitNames => ({
  limit: `x-ratelimit-limit-${kind}`, remaining: `x-ratelimit-remaining-${kind}`, reset: `x-ratelimit-reset-${kind}`,
});
const REQUESTS = anthropicNames('requests');
const TOKENS = anthropicNames('tokens');
const INPUT_TOKENS = anthropicNames('input-tokens');
const OPENAI_REQUESTS = openaiNames('requests');
const OPENAI_TOKENS = openaiNames('tokens');

function passLimits(out: PassHeaders, head: AnswerHead, from: LimitNames, to: LimitNames, now: number): void {
  const limit = head.get(from.limit);
  const remaining = head.get(from.remaining);
  const reset = head.get(from.reset);
  if (limit !== undefined) out.push([to.limit, limit]);
  if (remaining !== undefined) out.push([to.remaining, remaining]);
  const d = reset === undefined ? undefined : durationUntil(reset, now);
  if (d !== undefined) out.push([to.reset, d]);
}

export function passHeaders(head: AnswerHead, now = Date.now()): PassHeaders {
  const out: PassHeaders = [];
  const retry = head.get('retry-after');
  if (retry !== undefined) out.push(['retry-after', retry]);
  passLimits(out, head, REQUESTS, OPENAI_REQUESTS, now);
  // Newer accounts report input and output tokens apart; input is what a prompt spends first.
  passLimits(out, head, head.get(TOKENS.limit) === undefined ? INPUT_TOKENS : TOKENS, OPENAI_TOKENS, now);
  return out;
}
