// Whether a JSON text can be read only one way. JSON leaves repeated keys
// undefined: JSON.parse keeps the last value, other parsers keep the first or
// refuse. Policy scans what JSON.parse read, so the caller's own text may go
// upstream after a scan only when no object in it repeats a key; otherwise
// `{"content":"<secret>","content":"hi"}` would be scanned as "hi" and could be
// read upstream as the secret. A key with an escape is refused too, since
// "con\u0074ent" repeats "content" only once decoded. Moderation asks the same
// of an answer's text before it sends it as the upstream wrote it.
import { Char, hasBackslash, stringEnd } from './json-scan.js';

/** Keys an object may have before its keys are looked up in a Set rather than compared in place, one by one. */
const COMPARED_IN_PLACE = 16;

/**
 * True when no object in `text` (which JSON.parse has accepted) repeats a key
 * or spells one with an escape. Strings are jumped over with indexOf, so a long
 * prompt costs a few jumps; the walk keeps its own stack, so deep nesting
 * cannot overflow the call stack. A small object's keys are compared in the
 * text, allocating nothing (a streamed chunk is read in a fraction of the time
 * a Set per object took); a large one's go into a Set, so no object costs the
 * square of its keys. Text it cannot follow answers false.
 */
export function keysReadOneWay(text: string): boolean {
  // Key offsets (start, end) of every open object, innermost last.
  const keys: number[] = [];
  // Per open container: where its keys begin in `keys`, or -1 for an array.
  const frames: number[] = [];
  // Per open container: its keys as a Set, once it has more than COMPARED_IN_PLACE.
  const sets: Array<Set<string> | undefined> = [];
  let keyNext = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === Char.Quote) {
      const end = stringEnd(text, i);
      if (end < 0) return false;
      if (keyNext) {
        const start = i + 1;
        const stop = end - 1;
        if (hasBackslash(text, start, stop)) return false;
        const top = frames.length - 1;
        const set = sets[top];
        if (set) {
          const key = text.slice(start, stop);
          if (set.has(key)) return false;
          set.add(key);
        } else {
          const base = frames[top]!;
          for (let k = base; k < keys.length; k += 2) if (sameText(text, keys[k]!, keys[k + 1]!, start, stop)) return false;
          keys.push(start, stop);
          if (keys.length - base > 2 * COMPARED_IN_PLACE) {
            const s = new Set<string>();
            for (let k = base; k < keys.length; k += 2) s.add(text.slice(keys[k]!, keys[k + 1]!));
            sets[top] = s;
          }
        }
        keyNext = false;
      }
      i = end - 1;
    } else if (c === Char.OpenBrace) {
      frames.push(keys.length);
      sets.push(undefined);
      keyNext = true;
    } else if (c === Char.OpenBracket) {
      frames.push(-1);
      sets.push(undefined);
    } else if (c === Char.CloseBrace || c === Char.CloseBracket) {
      const base = frames.pop();
      sets.pop();
      if (base !== undefined && base >= 0) keys.length = base;
      keyNext = false;
    } else if (c === Char.Comma) {
      keyNext = frames.length > 0 && frames[frames.length - 1]! >= 0;
    }
  }
  return frames.length === 0;
}

function sameText(text: string, a: number, aEnd: number, b: number, bEnd: number): boolean {
  if (aEnd - a !== bEnd - b) return false;
  for (let i = 0; i < aEnd - a; i++) if (text.charCodeAt(a + i) !== text.charCodeAt(b + i)) return false;
  return true;
}
