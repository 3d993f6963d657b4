// What the scanners that read JSON text without parsing it share
// (json-members.ts, openai-compatible/chunk-tail.ts, gemini/stream.ts): the
// character codes of JSON's structure, and the step over a string.
export const QUOTE = 34;
export const COMMA = 44;
export const COLON = 58;
export const OPEN_BRACKET = 91;
export const BACKSLASH = 92;
export const CLOSE_BRACKET = 93;
export const OPEN_BRACE = 123;
export const CLOSE_BRACE = 125;

/**
 * `i` is an opening quote; returns the index just past its closing quote, or -1.
 * Jumps from quote to quote with indexOf, so a long string costs a few jumps.
 */
export function stringEnd(text: string, i: number): number {
  for (let from = i + 1; ;) {
    const q = text.indexOf('"', from);
    if (q < 0) return -1;
    let slashes = 0;
    while (text.charCodeAt(q - 1 - slashes) === BACKSLASH) slashes++;
    if ((slashes & 1) === 0) return q + 1;
    from = q + 1;
  }
}

/** Whether s[from, to) holds a backslash: keys are short, so a walk beats a search (which would run on past `to`). */
export function hasBackslash(s: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (s.charCodeAt(i) === BACKSLASH) return true;
  return false;
}
