// Texts the model reads as one (reading-units.ts), scanned joined: the
// matches that cross from one text of a unit into the next, and the unit's
// texts with those and their own replaced.
import type { CompiledPolicy, Substitution } from './compile.js';
import { firstEndingAfter } from './span-search.js';
import { findSpans, leftmost, type Span } from './spans.js';
import { inputView, joinedLinesView, type JoinedView, type TextView } from './text-reader.js';

/** A span of a unit's texts joined, with what it matched (a probe's text, which may hold its joiner). */
export interface UnitSpan extends Span {
  value: string;
}

/** What replaces a match: its placeholder or fixed replacement, counted (scan-input.ts). */
export type Replace = (sub: Substitution, value: string) => string;

/**
 * What a unit's texts are joined with to be read as one: nothing, as a
 * message's parts follow each other, and a line break, as Anthropic's joined
 * system text has between messages. An address split anywhere is read by the
 * first; a phrase whose halves need a space between them, by the second.
 */
const JOINERS = ['', '\n'] as const;

/** A unit read joined one way: the joiner, the text, the text as a reader sees it, and with line breaks inside tokens joined (`lines`: whether a detector reads that). */
export interface Probe { sep: string; text: string; view: TextView | undefined; joined: JoinedView | undefined }

/** The unit's texts joined each way (JOINERS). */
export function probesOf(texts: readonly string[], members: readonly number[], lines: boolean): Probe[] {
  return JOINERS.map((sep) => {
    const text = members.map((m) => texts[m]).join(sep);
    const view = inputView(text);
    return { sep, text, view, joined: lines ? joinedLinesView(text, view) : undefined };
  });
}

/** Where each member begins in the members joined with nothing between them, and where the last ends. */
function offsetsOf(texts: readonly string[], members: readonly number[]): number[] {
  const offsets = [0];
  for (const m of members) offsets.push(offsets[offsets.length - 1]! + texts[m]!.length);
  return offsets;
}

/**
 * The last member that begins at or before `p` in a join whose member j
 * begins at offsets[j] + j * gap (an empty member holds no position, so the
 * one after it is found). A binary search: a unit may have thousands of
 * members and its text as many matches.
 */
function memberAt(offsets: readonly number[], p: number, gap = 0): number {
  let lo = 0;
  let hi = offsets.length - 2;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (offsets[mid]! + mid * gap <= p) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** The members' own spans, placed in their plain join, each with what it matched; in order and apart, as each member's are. */
function ownSpans(texts: readonly string[], members: readonly number[], offsets: readonly number[], own: readonly Span[][]): UnitSpan[] {
  const spans: UnitSpan[] = [];
  members.forEach((m, j) => {
    for (const s of own[m]!) spans.push({ start: offsets[j]! + s.start, end: offsets[j]! + s.end, sub: s.sub, value: texts[m]!.slice(s.start, s.end) });
  });
  return spans;
}

/** Whether a span of `spans` (in order and apart) overlaps [start, end). */
function overlapsAny(spans: readonly Span[], start: number, end: number): boolean {
  const i = firstEndingAfter(spans, start);
  return i < spans.length && spans[i]!.start < end;
}

/**
 * The matches of the unit read joined, each way, that cross from one text
 * into the next and overlap no text's own match: spans of its texts joined
 * with nothing between them (a match's joiner is dropped with it), in order
 * and apart.
 */
export function crossingSpans(policy: CompiledPolicy, texts: readonly string[], members: readonly number[], probes: readonly Probe[], own: readonly Span[][]): UnitSpan[] {
  const offsets = offsetsOf(texts, members);
  const taken = ownSpans(texts, members, offsets, own);
  const spans: UnitSpan[] = [];
  for (const { sep, text: probe, view, joined } of probes) {
    // Position p of the probe in the plain join (a joiner's position is where the next member begins).
    const plain = (p: number): number => {
      const j = memberAt(offsets, p, sep.length);
      return Math.min(p - j * sep.length, offsets[j + 1]!);
    };
    for (const s of findSpans(policy, probe, view, joined)) {
      const start = plain(s.start);
      const end = plain(s.end);
      if (end <= start || memberAt(offsets, start) === memberAt(offsets, end - 1) || overlapsAny(taken, start, end)) continue;
      spans.push({ start, end, sub: s.sub, value: probe.slice(s.start, s.end) });
    }
  }
  return leftmost(spans);
}

/**
 * The unit's texts with their own matches and the crossing ones replaced: a
 * match that crosses texts leaves its placeholder where it begins and takes
 * its characters from each text it covers.
 */
export function redactUnit(texts: readonly string[], members: readonly number[], own: readonly Span[][], crossing: readonly UnitSpan[], replace: Replace): string[] {
  const offsets = offsetsOf(texts, members);
  const spans = [...ownSpans(texts, members, offsets, own), ...crossing].sort((a, b) => a.start - b.start);
  const out = members.map(() => '');
  // Copies [from, to) of the plain join to the members it lies in: only those, so the whole costs the unit's length.
  const copy = (from: number, to: number) => {
    for (let j = memberAt(offsets, from); j < members.length && offsets[j]! < to; j++) {
      const a = Math.max(from, offsets[j]!);
      const b = Math.min(to, offsets[j + 1]!);
      if (a < b) out[j] += texts[members[j]!]!.slice(a - offsets[j]!, b - offsets[j]!);
    }
  };
  let at = 0;
  for (const s of spans) {
    copy(at, s.start);
    out[memberAt(offsets, s.start)] += replace(s.sub, s.value);
    at = s.end;
  }
  copy(at, offsets[members.length]!);
  return out;
}
