// Text as its reader reads it, which policy reads besides the text as
// written. A reader does not see a zero-width space, a soft hyphen, a word
// joiner or a combining underline; sees a no-break space, a tab or a line
// break (and a run of them) as a space; a non-breaking hyphen or a minus sign
// as a hyphen; full-width, mathematical and accented letters, ligatures,
// number forms and small forms as the plain letters NFKD gives without their
// marks. A model reads them so too, but RE2's \s and \b and a term's letters
// do not: "ignore\u00a0previous instructions", "bob＠example.com",
// "make a b\u200bomb", "bömb" and "make a\nbomb" passed every rule (until
// 2026-11-29). Output is also read with its JSON escapes decoded, as the
// application's parser reads arguments or a structured answer:
// `{"q":"make a bo\u006db"}` is "make a bomb". Homoglyphs from other
// scripts (a Cyrillic а) are not folded: which are confusable depends on the
// script the reader expects.
//
// A decimal digit of any script (Unicode Nd: Arabic-Indic ٤, Persian ۴,
// Devanagari ४, Bengali ৪) reads as the ASCII digit of its value, as a model
// reads it; NFKD folds only full-width and mathematical ones, so a card
// number or an SSN in Arabic-Indic digits passed every detector (until
// 2026-11-29).
//
// A reader reads a stream piece by piece (chunked moderation) at the cost of
// each piece: it stops before an escape or a surrogate pair the piece cuts
// off, and goes on from there with the next.
//
// A line break inside a token is a wrap, not a gap: a reader (and a model)
// puts "bob@\nexample.com" or a key wrapped at a column back together, but
// read as a space the break split it into pieces no detector matched, and
// all of these passed DLP (until 2026-11-29). So input is also read with a
// line break (\n, \r\n, \r, NEL, U+2028, U+2029) between two token
// characters read as nothing, as a zero-width space is (joinedLinesView):
// only the token-shaped detectors read that (detectors.ts), since "end\nof"
// in prose is two words.

import { partitionPoint } from './span-search.js';

/** A reading of a text; `at[i]` is where what reads as `text[i]` begins in the text, `at[text.length]` its end (empty when not asked for). */
export interface TextView {
  readonly text: string;
  readonly at: readonly number[];
}

const SIMPLE_ESCAPES: Readonly<Record<string, string>> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

const isHex = (c: number): boolean => (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
export const isHighSurrogate = (c: number): boolean => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number): boolean => c >= 0xdc00 && c <= 0xdfff;

const DROPPED = /^[\p{Default_Ignorable_Code_Point}\p{Mn}\p{Me}]$/u;
const SPACE = /^[\p{Zs}\u0085\u2028\u2029\u2800\u3164]$/u;
const DASH = /^\p{Pd}$/u;
const MARKS = /\p{M}/gu;
const DIGIT = /^\p{Nd}$/u;

/** What a code point reads as; non-ASCII ones cached (a text repeats its letters), up to a bound. */
const folds = new Map<number, string>();
const MAX_FOLDS = 65_536;

function fold(cp: number): string {
  if (cp < 0x80) return cp === 9 || cp === 10 || cp === 11 || cp === 12 || cp === 13 ? ' ' : String.fromCharCode(cp);
  let s = folds.get(cp);
  if (s !== undefined) return s;
  const c = String.fromCodePoint(cp);
  if (DROPPED.test(c)) s = '';
  else if (SPACE.test(c)) s = ' ';
  else if (DASH.test(c)) s = '-';
  else if (DIGIT.test(c)) s = String(digitValue(cp));
  else {
    const bare = c.normalize('NFKD').replace(MARKS, '');
    s = bare === '' ? '' : bare.normalize('NFC');
  }
  if (folds.size < MAX_FOLDS) folds.set(cp, s);
  return s;
}

/**
 * The value of a decimal digit. Unicode assigns them only in runs of whole
 * sets of ten, each from 0 to 9 (its stability policy for Numeric_Type
 * Decimal), so a digit's value is its distance from the start of its run,
 * modulo ten. The longest run (mathematical digits) is fifty.
 */
function digitValue(cp: number): number {
  let start = cp;
  while (DIGIT.test(String.fromCodePoint(start - 1))) start--;
  return (cp - start) % 10;
}

/**
 * Anything besides a JSON escape or a double space that a reader folds, in
 * text NFKD leaves alone. One class, a digit but an ASCII one taken out of it
 * with the v flag (which TypeScript's ES2022 target does not allow in a
 * literal): a lookahead and a second class cost CJK text half as much again.
 */
const FOLDS_SOMETHING = new RegExp('[[\\p{Default_Ignorable_Code_Point}\\p{M}\\p{Zs}\\p{Pd}\\p{Nd}\\t\\n\\v\\f\\r\\u0085\\u2028\\u2029\\u2800\\u3164]--[0-9]]', 'v');

/**
 * Printable ASCII words with single spaces between them, backslashes
 * included or not: text that reads as written, told in one pass (a third of
 * the cost of a class test and a search for two spaces; 17 µs for 32 KB).
 */
const PLAIN = /^ ?(?:[\x21-\x7e]+ )*[\x21-\x7e]*$/;
const PLAIN_NO_ESCAPE = /^ ?(?:[\x21-\x5b\x5d-\x7e]+ )*[\x21-\x5b\x5d-\x7e]*$/;

/** Whether a whole text reads as written: most does, and is then read once. Plain ASCII is told at once, CJK by NFKD. */
function wholeReadsAsWritten(text: string, escapes: boolean): boolean {
  if ((escapes ? PLAIN_NO_ESCAPE : PLAIN).test(text)) return true;
  if ((escapes && text.includes('\\')) || text.includes('  ')) return false;
  return text.normalize('NFKD') === text && !FOLDS_SOMETHING.test(text);
}

/** Whether output `text`, after the character `before` (or none), reads as written: plain ASCII, no backslash, no space after a space. */
export function readsAsWritten(text: string, before: string): boolean {
  return PLAIN_NO_ESCAPE.test(text) && !(before === ' ' && text.startsWith(' '));
}

export class TextReader {
  /** The last character read was a space: a run of them reads as one. */
  #space = false;

  /** `escapes`: decode JSON escapes first (output). */
  constructor(private readonly escapes: boolean) {}

  /** The reader goes on after `text`, read elsewhere as written. */
  continueAfter(text: string): void {
    this.#space = text.endsWith(' ');
  }

  /**
   * Reads `raw`, which follows what it read before: the text read and, with
   * `positions`, where each of its characters began in `raw`; `to`, how far
   * it read. Unless `final`, it stops before an escape or a surrogate pair
   * cut off by the end.
   */
  read(raw: string, final: boolean, positions: boolean): { text: string; at: number[]; to: number } {
    let out = '';
    const at: number[] = [];
    let i = 0;
    while (i < raw.length) {
      let cp = raw.charCodeAt(i);
      // A run of printable ASCII reads as written, but a space after a space: copied whole.
      if (cp >= 0x20 && cp < 0x7f && !(cp === 92 && this.escapes) && !(cp === 32 && this.#space)) {
        let j = i + 1;
        for (let c = raw.charCodeAt(j); j < raw.length && c >= 0x20 && c < 0x7f && !(c === 92 && this.escapes) && !(c === 32 && raw.charCodeAt(j - 1) === 32); c = raw.charCodeAt(++j));
        out += raw.slice(i, j);
        if (positions) for (let k = i; k < j; k++) at.push(k);
        this.#space = raw.charCodeAt(j - 1) === 32;
        i = j;
        continue;
      }
      let next = i + 1;
      if (cp === 92 /* \ */ && this.escapes) {
        const e = escapeAt(raw, i, final);
        if (e === undefined) break;
        cp = e.cp;
        next = e.end;
      } else if (isHighSurrogate(cp)) {
        if (next === raw.length && !final) break;
        const lo = raw.charCodeAt(next);
        if (isLow(lo)) { cp = ((cp - 0xd800) << 10) + (lo - 0xdc00) + 0x10000; next++; }
      }
      const s = fold(cp);
      if (s === ' ' && this.#space) { i = next; continue; }
      if (s !== '') this.#space = s.endsWith(' ');
      out += s;
      if (positions) for (let k = 0; k < s.length; k++) at.push(i);
      i = next;
    }
    return { text: out, at, to: i };
  }
}

/**
 * The code point an escape at `i` reads as and where it ends; undefined when
 * the end cuts it off and more may come. A backslash that begins no escape,
 * or one the end cut off for good, reads as itself. A \u escape of a high
 * surrogate takes the low one's escape after it.
 */
function escapeAt(raw: string, i: number, final: boolean): { cp: number; end: number } | undefined {
  const c = raw[i + 1];
  if (c === undefined) return final ? { cp: 92, end: i + 1 } : undefined;
  if (c !== 'u') {
    const simple = SIMPLE_ESCAPES[c];
    return simple === undefined ? { cp: 92, end: i + 1 } : { cp: simple.charCodeAt(0), end: i + 2 };
  }
  const unit = hex4(raw, i + 2);
  if (unit === 'short') return final ? { cp: 92, end: i + 1 } : undefined;
  if (unit === undefined) return { cp: 92, end: i + 1 };
  if (!isHighSurrogate(unit)) return { cp: unit, end: i + 6 };
  // A high surrogate: the low one's escape completes the character, and may not have come yet.
  if (!final && raw.length < i + 12 && /^(?:\\(?:u[0-9a-fA-F]{0,3})?)?$/.test(raw.slice(i + 6))) return undefined;
  const low = raw.startsWith('\\u', i + 6) ? hex4(raw, i + 8) : undefined;
  if (typeof low === 'number' && isLow(low)) return { cp: ((unit - 0xd800) << 10) + (low - 0xdc00) + 0x10000, end: i + 12 };
  return { cp: unit, end: i + 6 };
}

/** The four hex digits at `i` as a number; 'short' when the text ends before four; undefined when one is not hex. */
function hex4(raw: string, i: number): number | 'short' | undefined {
  for (let k = 0; k < 4; k++) {
    if (i + k >= raw.length) return 'short';
    if (!isHex(raw.charCodeAt(i + k))) return undefined;
  }
  return parseInt(raw.slice(i, i + 4), 16);
}

/** The whole of `text` as its reader reads it, or undefined when that is the text as written. */
function readerView(text: string, escapes: boolean, positions: boolean): TextView | undefined {
  if (wholeReadsAsWritten(text, escapes)) return undefined;
  const { text: read, at } = new TextReader(escapes).read(text, true, positions);
  if (read === text) return undefined;
  if (positions) at.push(text.length);
  return { text: read, at };
}

/** Input as its reader reads it, with places, so that a match in it is redacted where it stands; undefined when that is the text as written. */
export const inputView = (text: string): TextView | undefined => readerView(text, false, true);

/** A line break: \n, \r, NEL, U+2028, U+2029 (\r\n is one). */
export const isLineBreak = (c: number): boolean => c === 10 || c === 13 || c === 0x85 || c === 0x2028 || c === 0x2029;

/** What a token is made of: ASCII letters and digits, and the punctuation of addresses, keys and tokens. */
const isToken = (c: number): boolean =>
  (c >= 97 && c <= 122) || (c >= 64 && c <= 90) || (c >= 45 && c <= 57) || c === 43 || c === 37 || c === 61 || c === 95 || c === 126;

const BREAKS = /\r\n?|[\n\u0085\u2028\u2029]/g;

/**
 * Input read with line breaks inside tokens read as nothing: the text, the
 * reading it was made from, and `cuts`, the places in the text where a break
 * was (before the character there), ascending.
 */
export interface JoinedView {
  readonly text: string;
  readonly read: TextView;
  readonly cuts: readonly number[];
}

/**
 * Input as `read` (its inputView) reads it, with each line break that sits
 * alone between two token characters read as nothing; undefined when there
 * is none. Made from the reading, not read again: a break reads there as a
 * space of its own (`at` points at it, and at the break's end next) between
 * what its neighbours read as. It keeps no places of its own (a megabyte's
 * places cost several milliseconds to copy): placeOf finds them in the reading's.
 */
export function joinedLinesView(text: string, read: TextView | undefined): JoinedView | undefined {
  if (read === undefined) return undefined;
  const { text: r, at } = read;
  const cuts: number[] = [];
  BREAKS.lastIndex = 0;
  for (let m = BREAKS.exec(text); m !== null; m = BREAKS.exec(text)) {
    const k = indexOf(at, m.index);
    if (k > 0 && k + 1 < r.length && r.charCodeAt(k) === 32 && at[k + 1] === m.index + m[0].length
      && isToken(r.charCodeAt(k - 1)) && isToken(r.charCodeAt(k + 1))) cuts.push(k - cuts.length);
  }
  if (cuts.length === 0) return undefined;
  let joined = '';
  let from = 0;
  cuts.forEach((c, d) => {
    joined += r.slice(from, c + d);
    from = c + d + 1;
  });
  return { text: joined + r.slice(from), read, cuts };
}

/** Where the character at `i` of a joined view (or its end, at its length) begins in the text as written. */
export function placeOf(view: JoinedView, i: number): number {
  // Every cut at or before i is a space of the reading left out before it.
  const { cuts } = view;
  return view.read.at[i + partitionPoint(cuts.length, (k) => cuts[k]! <= i)]!;
}

/** The index whose value is `p` in `at` (ascending, values may repeat: the first), or -1. */
function indexOf(at: readonly number[], p: number): number {
  const i = partitionPoint(at.length, (k) => at[k]! < p);
  return at[i] === p ? i : -1;
}

/**
 * A whole answer as its reader reads it, escapes decoded; undefined when that
 * is the text as written. Its `at` is left empty: a whole answer read once
 * needs no places, and they cost a number a character. (Chunked moderation
 * reads a stream piece by piece: chunked-moderator.ts.)
 */
export const outputView = (text: string): TextView | undefined => readerView(text, true, false);
