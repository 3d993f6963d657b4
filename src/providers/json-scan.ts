// What the scanners that read JSON text without parsing it share
// (json-members.ts, openai-compatible/chunk-tail.ts, gemini/stream.ts): the
// character codes of JSON's structure, white space, and the step over a string.
/**
 * JSON's structural characters by code. A const enum, so that tsc writes each
 * use as a number literal: a scanning loop that compared with an imported
 * `const` loaded it from its module cell, with a check that it had been
 * initialised, at every character (a fifth of memberTable's instructions).
 */
export const enum Char {
  Quote = 34,
  Comma = 44,
  Colon = 58,
  OpenBracket = 91,
  Backslash = 92,
  CloseBracket = 93,
  OpenBrace = 123,
  CloseBrace = 125,
}

/**
 * `i` is an opening quote; returns the index just past its closing quote, or -1.
 * Jumps from quote to quote with indexOf, so a long string costs a few jumps.
 */
export function stringEnd(text: string, i: number): number {
  for (let from = i + 1; ;) {
    const q = text.indexOf('"', from);
    if (q < 0) return -1;
    let slashes = 0;
    while (text.charCodeAt(q - 1 - slashes) === Char.Backslash) slashes++;
    if ((slashes & 1) === 0) return q + 1;
    from = q + 1;
  }
}

/** JSON's white space: space, tab, line feed, carriage return. */
export function isSpace(c: number): boolean { return c === 32 || c === 10 || c === 13 || c === 9; }

/** The first index from `i` on that is not white space. */
export function skipSpace(text: string, i: number): number {
  while (isSpace(text.charCodeAt(i))) i++;
  return i;
}

/** Whether s[from, to) holds a backslash: keys are short, so a walk beats a search (which would run on past `to`). */
export function hasBackslash(s: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (s.charCodeAt(i) === Char.Backslash) return true;
  return false;
}
