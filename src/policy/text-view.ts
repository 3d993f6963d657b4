// Another reading of a text, with where each of its characters came from, so
// that a match found in it can be placed in the text as written: the text as
// its reader reads it (text-reader.ts). Policy reads input so, and output so
// with its JSON escapes decoded too.
import { readerView } from './text-reader.js';

/** A reading of a text; `at[i]` is where what reads as `text[i]` begins in the text, `at[text.length]` its end (empty when not asked for). */
export interface TextView {
  readonly text: string;
  readonly at: readonly number[];
}

/** Input as its reader reads it; undefined when that is the text as written. */
export const inputView = (text: string): TextView | undefined => readerView(text, false);

/**
 * A whole answer as its reader reads it, escapes decoded; undefined when that
 * is the text as written. Its `at` is left empty: a whole answer read once
 * needs no places, and they cost a number a character. (Chunked moderation
 * reads a stream piece by piece: chunked-moderator.ts.)
 */
export const outputView = (text: string): TextView | undefined => readerView(text, true, false);
