// Where the token detectors' matches in the input read with line breaks
// inside tokens joined (text-reader.ts) stand as written, and which of them
// count beside the matches as written. A match there is placed with the
// breaks inside it, and without one after its last character. It takes as
// few breaks as it needs: "bob@\nexample.org.\nThanks" joined reads
// "bob@example.org.Thanks", an address whose greedy domain ends in "Thanks".
// Then, as its detector says (AcrossLines in detectors.ts):
//   - one that overlaps no match as written is added;
//   - one that runs a match of its own detector on from the same start, over
//     a line break, replaces it with the whole lines it adds that hold a
//     digit (a key wrapped at a column, whose head matched alone);
//   - any other gives way, as a unit's joined match does (scan-units.ts):
//     "Write to\nbob@x.io" does not take "to".
import type { CompiledPolicy } from './compile.js';
import type { CompiledDetector } from './detectors.js';
import { firstEndingAfter, partitionPoint } from './span-search.js';
import type { Span } from './spans.js';
import { isLineBreak, placeOf, type JoinedView } from './text-reader.js';

/** How many joined breaks, from each end of a match, are tried as its end or start. */
const MAX_CUTS = 16;

/** The matches to add to `own` (in order and apart), and those of `own` they replace. */
export function acrossLines(policy: CompiledPolicy, text: string, view: JoinedView, own: readonly Span[]): { added: Span[]; replaced: Set<Span> } {
  const added: Span[] = [];
  const replaced = new Set<Span>();
  for (const d of policy.detectors) {
    if (d.lines === undefined) continue;
    d.scan(view.text, (s, e) => {
      const start = placeOf(view, s);
      const end = before(text, start, placeOf(view, e));
      if (end <= start) return;
      const first = firstEndingAfter(own, start);
      const next = own[first];
      if (next === undefined || next.start >= end) {
        const [s2, e2] = fewestBreaks(d, view, s, e);
        const a = placeOf(view, s2);
        const b = before(text, a, placeOf(view, e2));
        const z = d.lines === 'runs-on' ? wrappedEnd(text, b, end) : b;
        if (z > a) added.push({ start: a, end: z, sub: d.sub });
      } else if (d.lines === 'runs-on' && next.start === start && next.sub === d.sub && next.end < end) {
        const to = wrappedEnd(text, next.end, end);
        if (to > next.end && (own[first + 1]?.start ?? Infinity) >= to) {
          replaced.add(next);
          added.push({ start, end: to, sub: d.sub });
        }
      }
    });
  }
  return { added, replaced };
}

/** `end` without the line breaks just before it (a joined break after a match's last character is not the match's). */
function before(text: string, start: number, end: number): number {
  while (end > start && isLineBreak(text.charCodeAt(end - 1))) end--;
  return end;
}

/**
 * The match [s, e) of the view with as few joined breaks as it needs: cut
 * at the first break before which the detector still matches from its start,
 * then begun at the last break after which it still matches to its end.
 */
function fewestBreaks(d: CompiledDetector, view: JoinedView, s: number, e: number): [number, number] {
  const cuts = view.cuts.slice(firstAbove(view.cuts, s), firstAbove(view.cuts, e - 1));
  if (cuts.length === 0) return [s, e];
  for (const k of cuts.slice(0, MAX_CUTS)) {
    const end = matchFrom(d, view.text.slice(s, k));
    if (end > 0) { e = s + end; break; }
  }
  for (const k of cuts.filter((c) => c < e).slice(-MAX_CUTS).reverse()) {
    if (matchFrom(d, view.text.slice(k, e)) === e - k) { s = k; break; }
  }
  return [s, e];
}

/** Where the detector's first match in `text` ends when it begins at its start; 0 when none does. */
function matchFrom(d: CompiledDetector, text: string): number {
  let end = 0;
  d.scan(text, (a, b) => { if (a === 0 && end === 0) end = b; });
  return end;
}

/** The index of the first of `values` (ascending) above `p`; its length when none is. */
const firstAbove = (values: readonly number[], p: number): number => partitionPoint(values.length, (i) => values[i]! <= p);

/**
 * Where a match that ends a line at `from` ends when the whole lines after
 * it, up to `to`, are its wrapped tail: each up to the first without a
 * digit (a key's lines hold one; a word such as "Thanks" or a name such as
 * "NEXT_KEY" mostly does not), and never part of a line (the first word of
 * the next line is not the key's).
 */
function wrappedEnd(text: string, from: number, to: number): number {
  let end = from;
  for (let p = from; p < to && isLineBreak(text.charCodeAt(p));) {
    p += text.charCodeAt(p) === 13 && text.charCodeAt(p + 1) === 10 ? 2 : 1;
    let q = p;
    let digit = false;
    for (let c = text.charCodeAt(q); q < to && !isLineBreak(c); c = text.charCodeAt(++q)) digit ||= c >= 48 && c <= 57;
    if (!digit || !(q === text.length || isLineBreak(text.charCodeAt(q)))) break;
    end = q;
    p = q;
  }
  return end;
}
