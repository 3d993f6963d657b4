// Another reading of a text, with where each of its characters came from, so
// that a match found in it can be placed in the text as written: the text
// with its JSON escapes decoded (escaped-view.ts) or as a reader sees it
// (folded-view.ts). Policy reads input folded, and output both decoded and
// folded.
import { escapedView } from './escaped-view.js';
import { foldedView } from './folded-view.js';

/** A reading of a text; `at[i]` is where what reads as `text[i]` begins in the text, `at[text.length]` its end (empty when not asked for). */
export interface TextView {
  readonly text: string;
  readonly at: readonly number[];
}

/** The first index of the view at or after `raw`, an index of the text. */
export function viewIndex(view: TextView, raw: number): number {
  let lo = 0;
  let hi = view.text.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (view.at[mid]! < raw) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** `inner`, a view of `outer.text`, as a view of the text `outer` reads. */
function compose(outer: TextView, inner: TextView): TextView {
  return { text: inner.text, at: inner.at.map((i) => outer.at[i]!) };
}

/**
 * Output as its reader reads it: escapes decoded, then folded; undefined when
 * that is the text as written. Without `positions` its `at` is left empty: a
 * whole answer read once needs no places, and they cost a number a character.
 */
export function outputView(text: string, positions = true): TextView | undefined {
  const escaped = escapedView(text, positions);
  if (escaped === undefined) return foldedView(text, positions);
  const folded = foldedView(escaped.text, positions);
  return folded === undefined ? escaped : positions ? compose(escaped, folded) : folded;
}
