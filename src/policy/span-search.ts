// Binary search over what policy keeps in order: spans in order and apart
// (leftmost() in spans.ts), among which redaction and the line-joined reading
// (across-lines.ts) place a match, and a reading's places (text-reader.ts).
import type { Span } from './spans.js';

/** The first index in [0, n) where `before` turns false (it is true, then false, along the range); n when it never does. */
export function partitionPoint(n: number, before: (i: number) => boolean): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (before(mid)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The index of the first of `spans` (in order and apart) that ends after `p`; its length when none does. */
export const firstEndingAfter = (spans: readonly Span[], p: number): number => partitionPoint(spans.length, (i) => spans[i]!.end <= p);
