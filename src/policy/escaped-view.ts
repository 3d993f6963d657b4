// Output text as a JSON parser will read it. Tool-call arguments are JSON
// text, and so is a structured answer's content: the application parses
// them, so `{"q":"make a bo\u006db"}` reaches it as "make a bomb" though no
// rule matches the text as sent. Moderation reads such text both ways (until
// 2026-11-29 it read it only as sent). Each escape is decoded wherever it
// stands, in a string or not: outside one, JSON has no backslash to read.

import type { TextView } from './text-view.js';

const SIMPLE: Readonly<Record<string, string>> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

const isHex = (c: number): boolean => (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);

/**
 * The view of `text`, or undefined when it holds no backslash (most text:
 * then it reads one way). An escape cut off by the text's end (a stream's
 * piece may end inside one) is read as one character, the least it can
 * become, so a window that counts the view's characters never holds back too
 * little. A backslash that begins no escape is read as itself.
 */
export function escapedView(text: string, positions = true): TextView | undefined {
  if (!text.includes('\\')) return undefined;
  let out = '';
  const at: number[] = [];
  let i = 0;
  while (i < text.length) {
    if (positions) at.push(i);
    const c = text[i]!;
    if (c !== '\\') {
      out += c;
      i++;
      continue;
    }
    const next = text[i + 1];
    if (next === undefined) {
      out += c;
      i++;
    } else if (next !== 'u') {
      const simple = SIMPLE[next];
      out += simple ?? c;
      i += simple === undefined ? 1 : 2;
    } else {
      let hex = 0;
      while (hex < 4 && i + 2 + hex < text.length && isHex(text.charCodeAt(i + 2 + hex))) hex++;
      if (hex === 4) {
        out += String.fromCharCode(parseInt(text.slice(i + 2, i + 6), 16));
        i += 6;
      } else if (i + 2 + hex === text.length) {
        // Cut off by the end: one character to come.
        out += c;
        i = text.length;
      } else {
        out += c;
        i++;
      }
    }
  }
  if (positions) at.push(text.length);
  return { text: out, at };
}
