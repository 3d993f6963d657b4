// Rate-limit headers pass back unchanged: the openai SDK reads retry-after
// (and retry-after-ms) to time its retries, and callers read x-ratelimit-* to
// pace themselves. Nothing else of the upstream's headers is the caller's.
import type { PassHeaders } from '../../domain.js';
import type { AnswerHead } from '../../upstream/h1/answer-head.js';

export function passHeaders(head: AnswerHead): PassHeaders {
  const out: PassHeaders = [];
  for (let i = 0; i < head.size; i++) {
    if (!head.nameStartsWith(i, 'x-ratelimit-') && !head.nameIs(i, 'retry-after') && !head.nameIs(i, 'retry-after-ms')) continue;
    const name = head.name(i);
    // A repeated header is one, its values joined, as node reads a list header.
    let had = 0;
    while (had < out.length && out[had]![0] !== name) had++;
    if (had < out.length) out[had]![1] += `, ${head.value(i)}`;
    else out.push([name, head.value(i)]);
  }
  return out;
}
