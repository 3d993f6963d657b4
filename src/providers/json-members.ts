// Where each top-level member of a JSON object text sits, so a body can be the
// caller's (or the upstream's) own text with a few values replaced. JSON.stringify
// of a long prompt costs several times its JSON.parse (about 55 µs for 32 KB on
// Node 20); finding the members is a few jumps between quotes and brackets.
// It is given text JSON.parse has accepted, but checks each step anyway: text
// it cannot follow makes it give up (the caller re-serialises), never loop.
// Walked by character code, it costs fewer instructions than JSON.stringify
// even on a 300-byte body, so bodies of every size are spliced.
import { CLOSE_BRACE, CLOSE_BRACKET, COMMA, OPEN_BRACE, OPEN_BRACKET, QUOTE, stringEnd } from './json-scan.js';

/** Value spans [start, end) by key; undefined when a key is escaped or repeated (JSON.parse's last-wins would disagree). */
export type MemberSpans = Map<string, readonly [number, number]>;

function isSpace(c: number): boolean { return c === 32 || c === 10 || c === 13 || c === 9; }

function skipSpace(text: string, i: number): number {
  while (isSpace(text.charCodeAt(i))) i++;
  return i;
}

/**
 * `i` is a value's first character; returns the index just past the value, or -1.
 * A character-code walk, not a global regex: a regex match allocates its result
 * and, in the server, cost several times this walk (about 7 µs on a 300-byte answer).
 * Strings are jumped over with indexOf, so a long prompt costs a few jumps.
 */
function valueEnd(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c === QUOTE) return stringEnd(text, i);
  const n = text.length;
  if (c !== OPEN_BRACE && c !== OPEN_BRACKET) {
    let j = i;
    while (j < n) {
      const d = text.charCodeAt(j);
      if (d === COMMA || d === CLOSE_BRACE || d === CLOSE_BRACKET || isSpace(d)) break;
      j++;
    }
    return j > i && j < n ? j : -1;
  }
  let depth = 0;
  for (let j = i; j < n; j++) {
    const d = text.charCodeAt(j);
    if (d === QUOTE) {
      const end = stringEnd(text, j);
      if (end < 0) return -1;
      j = end - 1;
    } else if (d === OPEN_BRACE || d === OPEN_BRACKET) {
      depth++;
    } else if (d === CLOSE_BRACE || d === CLOSE_BRACKET) {
      if (--depth === 0) return j + 1;
    }
  }
  return -1;
}

/** Every step checks the character it expects, so text it cannot follow is refused, never looped over. */
export function memberSpans(text: string): MemberSpans | undefined {
  const spans: MemberSpans = new Map();
  let i = skipSpace(text, 0);
  if (text[i] !== '{') return undefined;
  i = skipSpace(text, i + 1);
  if (text[i] === '}') return spans;
  for (;;) {
    if (text[i] !== '"') return undefined;
    const keyEnd = stringEnd(text, i);
    if (keyEnd < 0) return undefined;
    const key = text.slice(i + 1, keyEnd - 1);
    if (key.includes('\\') || spans.has(key)) return undefined;
    i = skipSpace(text, keyEnd);
    if (text[i] !== ':') return undefined;
    i = skipSpace(text, i + 1);
    const end = valueEnd(text, i);
    if (end < 0) return undefined;
    spans.set(key, [i, end]);
    i = skipSpace(text, end);
    if (text[i] === '}') return spans;
    if (text[i] !== ',') return undefined;
    i = skipSpace(text, i + 1);
  }
}

/**
 * The object text with each of `members` set: a member the text has gets its
 * value replaced, one it lacks is appended; every other member stays as the
 * text wrote it. Undefined where memberSpans cannot vouch for the text, or a
 * value has no JSON (undefined, a function), which re-serialising would drop.
 */
export function withMembers(text: string, members: Record<string, unknown>): string | undefined {
  const spans = memberSpans(text);
  if (!spans) return undefined;
  const edits: Array<readonly [number, number, string]> = [];
  let added = '';
  for (const key in members) {
    const value = JSON.stringify(members[key]) as string | undefined;
    if (value === undefined) return undefined;
    const span = spans.get(key);
    if (span) edits.push([span[0], span[1], value]);
    else added += `,${JSON.stringify(key)}:${value}`;
  }
  if (added) {
    const end = text.lastIndexOf('}');
    edits.push([end, end, spans.size ? added : added.slice(1)]);
  }
  edits.sort((a, b) => a[0] - b[0]);
  let out = '';
  let at = 0;
  for (const [start, end, value] of edits) {
    out += text.slice(at, start) + value;
    at = end;
  }
  return out + text.slice(at);
}

/**
 * The object text with `members` set inside the object that is its member
 * `key` (a Responses event's `response`), everything else as the text wrote
 * it. Undefined where withMembers would be, or where `key` holds no object.
 */
export function withInnerMembers(text: string, key: string, members: Record<string, unknown>): string | undefined {
  const span = memberSpans(text)?.get(key);
  if (!span || text.charCodeAt(span[0]) !== OPEN_BRACE) return undefined;
  const inner = withMembers(text.slice(span[0], span[1]), members);
  return inner === undefined ? undefined : text.slice(0, span[0]) + inner + text.slice(span[1]);
}
