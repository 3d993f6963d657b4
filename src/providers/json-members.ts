// Where each top-level member of a JSON object text sits, so a body can be the
// caller's (or the upstream's) own text with a few values replaced. JSON.stringify
// of a long prompt costs several times its JSON.parse (about 55 µs for 32 KB on
// Node 20); finding the members is a few jumps between quotes and brackets.
// It is given text JSON.parse has accepted, but checks each step anyway: text
// it cannot follow makes it give up (the caller re-serialises), never loop.
// Walked by character code, it costs fewer instructions than JSON.stringify
// even on a 300-byte body, so bodies of every size are spliced.
import { Char, hasBackslash, stringEnd, isSpace, skipSpace } from './json-scan.js';

/** Value spans [start, end) by key; undefined when a key is escaped or repeated (JSON.parse's last-wins would disagree). */
export type MemberSpans = Map<string, readonly [number, number]>;

/**
 * Per member, in order: where its key's text starts and ends (inside the
 * quotes), and where its value starts and ends. Flat numbers, not a map of
 * sliced keys: on a request's few members, slicing, hashing and storing every
 * key cost more than comparing the keys in place (withMembers on a request
 * and its answer: 25.4k instructions against 22.6k).
 */
type MemberTable = number[];
const STRIDE = 4;

/**
 * Up to this many members a repeated key is found by comparing keys in place
 * (a request has a handful); past it, by a set, so that a body of a hundred
 * thousand keys costs their number, not its square.
 */
const COMPARED_IN_PLACE = 32;

/**
 * `i` is a value's first character; returns the index just past the value, or -1.
 * A character-code walk, not a global regex: a regex match allocates its result
 * and, in the server, cost several times this walk (about 7 µs on a 300-byte answer).
 * Strings are jumped over with indexOf, so a long prompt costs a few jumps.
 */
function valueEnd(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c === Char.Quote) return stringEnd(text, i);
  const n = text.length;
  if (c !== Char.OpenBrace && c !== Char.OpenBracket) {
    let j = i;
    while (j < n) {
      const d = text.charCodeAt(j);
      if (d === Char.Comma || d === Char.CloseBrace || d === Char.CloseBracket || isSpace(d)) break;
      j++;
    }
    return j > i && j < n ? j : -1;
  }
  let depth = 0;
  for (let j = i; j < n; j++) {
    const d = text.charCodeAt(j);
    if (d === Char.Quote) {
      const end = stringEnd(text, j);
      if (end < 0) return -1;
      j = end - 1;
    } else if (d === Char.OpenBrace || d === Char.OpenBracket) {
      depth++;
    } else if (d === Char.CloseBrace || d === Char.CloseBracket) {
      if (--depth === 0) return j + 1;
    }
  }
  return -1;
}

function sameText(text: string, a: number, b: number, length: number): boolean {
  for (let k = 0; k < length; k++) if (text.charCodeAt(a + k) !== text.charCodeAt(b + k)) return false;
  return true;
}

/** Whether the key at [start, end) repeats one of the table's: the keys hold no escapes, so equal text is an equal key. */
function repeats(text: string, table: MemberTable, start: number, end: number, seen: Set<string> | undefined): boolean {
  if (seen) return seen.size === seen.add(text.slice(start, end)).size;
  const length = end - start;
  for (let m = 0; m < table.length; m += STRIDE) {
    if (table[m + 1]! - table[m]! === length && sameText(text, table[m]!, start, length)) return true;
  }
  return false;
}

/** Every step checks the character it expects, so text it cannot follow is refused, never looped over. */
function memberTable(text: string): MemberTable | undefined {
  const table: MemberTable = [];
  let seen: Set<string> | undefined;
  let i = skipSpace(text, 0);
  if (text.charCodeAt(i) !== Char.OpenBrace) return undefined;
  i = skipSpace(text, i + 1);
  if (text.charCodeAt(i) === Char.CloseBrace) return table;
  for (;;) {
    if (text.charCodeAt(i) !== Char.Quote) return undefined;
    const keyEnd = stringEnd(text, i);
    if (keyEnd < 0) return undefined;
    const start = i + 1;
    const end = keyEnd - 1;
    if (hasBackslash(text, start, end) || repeats(text, table, start, end, seen)) return undefined;
    if (!seen && table.length === STRIDE * COMPARED_IN_PLACE) {
      seen = new Set();
      for (let m = 0; m < table.length; m += STRIDE) seen.add(text.slice(table[m], table[m + 1]));
      seen.add(text.slice(start, end));
    }
    i = skipSpace(text, keyEnd);
    if (text.charCodeAt(i) !== Char.Colon) return undefined;
    i = skipSpace(text, i + 1);
    const valueStop = valueEnd(text, i);
    if (valueStop < 0) return undefined;
    table.push(start, end, i, valueStop);
    i = skipSpace(text, valueStop);
    if (text.charCodeAt(i) === Char.CloseBrace) return table;
    if (text.charCodeAt(i) !== Char.Comma) return undefined;
    i = skipSpace(text, i + 1);
  }
}

/** The table's offset of member `key`, or -1. */
function findMember(text: string, table: MemberTable, key: string): number {
  for (let m = 0; m < table.length; m += STRIDE) {
    if (table[m + 1]! - table[m]! === key.length && text.startsWith(key, table[m])) return m;
  }
  return -1;
}

/** Each member's value span by key: the table as a map, to read whole (the splices below search the table). */
export function memberSpans(text: string): MemberSpans | undefined {
  const table = memberTable(text);
  if (!table) return undefined;
  const spans: MemberSpans = new Map();
  for (let m = 0; m < table.length; m += STRIDE) spans.set(text.slice(table[m], table[m + 1]), [table[m + 2]!, table[m + 3]!]);
  return spans;
}

/**
 * Printable ASCII without a quote or a backslash: such a string's JSON is
 * itself in quotes. A regex, not a loop by character code: an id is a string
 * built by concatenation, which charCodeAt reads the slow way.
 */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/**
 * A value's JSON text. An id or a model name is quoted as it is: JSON.stringify
 * sets up a serialiser for each call, 1.5k instructions for a short string
 * against 0.9k for the test (a JSON request, which sets three, read 2k fewer
 * with this and no sort below: 184k to 182k, 2026-11-28).
 */
function jsonOf(v: unknown): string | undefined {
  return typeof v === 'string' && PLAIN.test(v) ? `"${v}"` : JSON.stringify(v) as string | undefined;
}

/**
 * The object text with each of `members` set: a member the text has gets its
 * value replaced, one it lacks is appended; every other member stays as the
 * text wrote it. Undefined where memberTable cannot vouch for the text, or a
 * value has no JSON (undefined, a function), which re-serialising would drop.
 */
export function withMembers(text: string, members: Record<string, unknown>): string | undefined {
  const table = memberTable(text);
  if (!table) return undefined;
  const edits: Array<readonly [number, number, string]> = [];
  let added = '';
  let ordered = true;
  for (const key in members) {
    const value = jsonOf(members[key]);
    if (value === undefined) return undefined;
    const m = findMember(text, table, key);
    if (m < 0) { added += `,${jsonOf(key)!}:${value}`; continue; }
    if (edits.length > 0 && edits[edits.length - 1]![0] > table[m + 2]!) ordered = false;
    edits.push([table[m + 2]!, table[m + 3]!, value]);
  }
  if (added) {
    const end = text.lastIndexOf('}');
    edits.push([end, end, table.length ? added : added.slice(1)]);
  }
  // Members set in the order the text has them (an answer's id, then its model) need no sort (0.9k instructions a request).
  if (!ordered) edits.sort((a, b) => a[0] - b[0]);
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
  const table = memberTable(text);
  const m = table ? findMember(text, table, key) : -1;
  if (!table || m < 0) return undefined;
  const start = table[m + 2]!;
  const end = table[m + 3]!;
  if (text.charCodeAt(start) !== Char.OpenBrace) return undefined;
  const inner = withMembers(text.slice(start, end), members);
  return inner === undefined ? undefined : text.slice(0, start) + inner + text.slice(end);
}
