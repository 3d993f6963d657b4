// Whether a JSON text can be read only one way. JSON leaves repeated keys
// undefined: JSON.parse keeps the last value, other parsers keep the first or
// refuse. Policy scans what JSON.parse read, so the caller's own text may go
// upstream after a scan only when no object in it repeats a key; otherwise
// `{"content":"<secret>","content":"hi"}` would be scanned as "hi" and could be
// read upstream as the secret. A key with an escape is refused too, since
// "con\u0074ent" repeats "content" only once decoded.
import { Char, stringEnd } from './json-scan.js';

/**
 * True when no object in `text` (which JSON.parse has accepted) repeats a key
 * or spells one with an escape. Strings are jumped over with indexOf, so a long
 * prompt costs a few jumps; the walk keeps its own stack, so deep nesting
 * cannot overflow the call stack. Text it cannot follow answers false.
 */
export function keysReadOneWay(text: string): boolean {
  // One entry per open container: the keys seen so far for an object, undefined for an array.
  const open: Array<Set<string> | undefined> = [];
  let keyNext = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === Char.Quote) {
      const end = stringEnd(text, i);
      if (end < 0) return false;
      if (keyNext) {
        const key = text.slice(i + 1, end - 1);
        const seen = open[open.length - 1]!;
        if (key.includes('\\') || seen.has(key)) return false;
        seen.add(key);
        keyNext = false;
      }
      i = end - 1;
    } else if (c === Char.OpenBrace) {
      open.push(new Set());
      keyNext = true;
    } else if (c === Char.OpenBracket) {
      open.push(undefined);
    } else if (c === Char.CloseBrace || c === Char.CloseBracket) {
      open.pop();
      keyNext = false;
    } else if (c === Char.Comma) {
      keyNext = open[open.length - 1] !== undefined;
    }
  }
  return open.length === 0;
}
