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

export function passHeaders(head: AnswerHead, now = Date.now()): PassHeaders {
  const out: PassHeaders = [];
  const retry = head.get('retry-after');
  if (retry !== undefined) out.push(['retry-after', retry]);
  for (const kind of ['requests', 'tokens'] as const) {
    // Newer accounts report input and output tokens apart; input is what a prompt spends first.
    const src = kind === 'tokens' && head.get('anthropic-ratelimit-tokens-limit') === undefined ? 'input-tokens' : kind;
    const limit = head.get(`anthropic-ratelimit-${src}-limit`);
    const remaining = head.get(`anthropic-ratelimit-${src}-remaining`);
    const reset = head.get(`anthropic-ratelimit-${src}-reset`);
    if (limit !== undefined) out.push([`x-ratelimit-limit-${kind}`, limit]);
    if (remaining !== undefined) out.push([`x-ratelimit-remaining-${kind}`, remaining]);
    const d = reset === undefined ? undefined : durationUntil(reset, now);
    if (d !== undefined) out.push([`x-ratelimit-reset-${kind}`, d]);
  }
  return out;
}
