// Input guarding for one request: shield blocks first, then every DLP and
// shield-redact substitution, applied to all of the request's texts with one
// numbering so that a value seen twice, in any text, gets the same placeholder.
// Texts the model reads as one (reading-units.ts) are scanned joined as well
// as one by one. Pure and synchronous: the engine runs it inline and the
// worker runs it as is.
import type { CompiledPolicy, Substitution } from './compile.js';
import { foldedView } from './folded-view.js';
import type { RuleHit, RuleSet } from './rule-set.js';
import type { InputScan } from './types.js';

export type ScanOutcome =
  | { blocked: false; scan: InputScan }
  | { blocked: true; rule: string };

interface Span {
  start: number;
  end: number;
  sub: Substitution;
}

/** A span of a unit's texts joined, with what it matched (a probe's text, which may hold its joiner). */
interface UnitSpan extends Span {
  value: string;
}

/**
 * What a unit's texts are joined with to be read as one: nothing, as a
 * message's parts follow each other, and a line break, as Anthropic's joined
 * system text has between messages. An address split anywhere is read by the
 * first; a phrase whose halves need a space between them, by the second.
 */
const JOINERS = ['', '\n'] as const;

/** The substitutions made so far: one numbering and one count for the request. */
class Tally {
  readonly numbering = new Numbering();
  readonly byType: Record<string, number> = {};
  redactions = 0;

  replacement(sub: Substitution, value: string): string {
    this.redactions++;
    this.byType[sub.type] = (this.byType[sub.type] ?? 0) + 1;
    return sub.replacement ?? this.numbering.placeholder(sub.label, value);
  }
}

/** Placeholders for one request: [LABEL_n], n counted per label, keyed by value. */
class Numbering {
  readonly #next = new Map<string, number>();
  readonly #seen = new Map<string, string>();

  placeholder(label: string, value: string): string {
    const key = `${label}\u0000${value}`;
    let p = this.#seen.get(key);
    if (p === undefined) {
      const n = (this.#next.get(label) ?? 0) + 1;
      this.#next.set(label, n);
      p = `[${label}_${n}]`;
      this.#seen.set(key, p);
    }
    return p;
  }
}

export function scanTexts(policy: CompiledPolicy, texts: readonly string[], groups: readonly (readonly number[])[] = []): ScanOutcome {
  const blocks = policy.blocks;
  if (blocks !== undefined) {
    for (const text of texts) {
      const rule = blockedBy(blocks, text);
      if (rule !== undefined) return { blocked: true, rule };
    }
    for (const g of groups) {
      for (const sep of JOINERS) {
        const rule = blockedBy(blocks, g.map((i) => texts[i]).join(sep));
        if (rule !== undefined) return { blocked: true, rule };
      }
    }
  }
  // Each text's own matches, then those read across texts: a match of a unit read joined that crosses
  // from one of its texts into the next and covers none of theirs (those take precedence: a match of the
  // joined text may run a text's own match into the next, "a@x.io" + "b@x.io" read as "a@x.iob").
  const own = texts.map((t) => findSpans(policy, t));
  const crossing = new Map<number, { members: readonly number[]; spans: UnitSpan[] }>();
  for (const members of groups) {
    const spans = crossingSpans(policy, texts, members, own);
    if (spans.length > 0) crossing.set(members[0]!, { members, spans });
  }
  const tally = new Tally();
  const out = texts.slice();
  const done = new Set<number>();
  for (let i = 0; i < texts.length; i++) {
    if (done.has(i)) continue;
    const unit = crossing.get(i);
    if (unit === undefined) {
      out[i] = redact(texts[i]!, own[i]!, tally);
      continue;
    }
    const redacted = redactUnit(texts, unit.members, own, unit.spans, tally);
    unit.members.forEach((m, j) => { out[m] = redacted[j]!; done.add(m); });
  }
  return { blocked: false, scan: { texts: out, redactions: tally.redactions, byType: tally.byType } };
}

/** `text` with each span replaced, spans in order and apart. */
function redact(text: string, spans: readonly Span[], tally: Tally): string {
  if (spans.length === 0) return text;
  let result = '';
  let at = 0;
  for (const s of spans) {
    result += text.slice(at, s.start) + tally.replacement(s.sub, text.slice(s.start, s.end));
    at = s.end;
  }
  return result + text.slice(at);
}

/** Where each member begins in the members joined with nothing between them, and where the last ends. */
function offsetsOf(texts: readonly string[], members: readonly number[]): number[] {
  const offsets = [0];
  for (const m of members) offsets.push(offsets[offsets.length - 1]! + texts[m]!.length);
  return offsets;
}

/** The members' own spans, placed in their plain join, each with what it matched. */
function ownSpans(texts: readonly string[], members: readonly number[], offsets: readonly number[], own: readonly Span[][]): UnitSpan[] {
  const spans: UnitSpan[] = [];
  members.forEach((m, j) => {
    for (const s of own[m]!) spans.push({ start: offsets[j]! + s.start, end: offsets[j]! + s.end, sub: s.sub, value: texts[m]!.slice(s.start, s.end) });
  });
  return spans;
}

/**
 * The matches of the unit read joined, each way, that cross from one text
 * into the next and overlap no text's own match: spans of its texts joined
 * with nothing between them (a match's joiner is dropped with it), in order
 * and apart.
 */
function crossingSpans(policy: CompiledPolicy, texts: readonly string[], members: readonly number[], own: readonly Span[][]): UnitSpan[] {
  const offsets = offsetsOf(texts, members);
  const taken = ownSpans(texts, members, offsets, own);
  const spans: UnitSpan[] = [];
  for (const sep of JOINERS) {
    const probe = members.map((m) => texts[m]).join(sep);
    // Position p of the probe in the plain join: member j begins at offsets[j] + j * sep.length there.
    const plain = (p: number): number => {
      let j = 0;
      while (j + 1 < members.length && offsets[j + 1]! + (j + 1) * sep.length <= p) j++;
      return Math.min(p - j * sep.length, offsets[j + 1]!);
    };
    for (const s of findSpans(policy, probe)) {
      const start = plain(s.start);
      const end = plain(s.end);
      const crosses = offsets.some((o, k) => k > 0 && k < members.length && start < o && o < end);
      if (!crosses || taken.some((t) => t.start < end && start < t.end)) continue;
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
function redactUnit(texts: readonly string[], members: readonly number[], own: readonly Span[][], crossing: readonly UnitSpan[], tally: Tally): string[] {
  const offsets = offsetsOf(texts, members);
  const spans = [...ownSpans(texts, members, offsets, own), ...crossing].sort((a, b) => a.start - b.start);
  const out = members.map(() => '');
  // Copies [from, to) of the plain join to the members it lies in.
  const copy = (from: number, to: number) => {
    members.forEach((m, j) => {
      const a = Math.max(from, offsets[j]!);
      const b = Math.min(to, offsets[j + 1]!);
      if (a < b) out[j] += texts[m]!.slice(a - offsets[j]!, b - offsets[j]!);
    });
  };
  let at = 0;
  for (const s of spans) {
    copy(at, s.start);
    // The member the match begins in (an empty member holds no position).
    let j = 0;
    while (j + 1 < members.length && offsets[j + 1]! <= s.start) j++;
    out[j] += tally.replacement(s.sub, s.value);
    at = s.end;
  }
  copy(at, offsets[members.length]!);
  return out;
}

/** The first block rule that matches the text as written or as a reader sees it (folded-view.ts). */
function blockedBy(blocks: RuleSet<string>, text: string): string | undefined {
  const rule = blocks.firstRule(text);
  if (rule !== undefined) return rule;
  const folded = foldedView(text);
  return folded === undefined ? undefined : blocks.firstRule(folded.text);
}

/**
 * All matchers run over the original text, never over each other's output, so a
 * placeholder cannot be re-matched; and over the text as a reader sees it, where
 * that differs (folded-view.ts), a match there placed where it stands as
 * written ("bob＠example.com" whole; "b\u200bob@x.io" from its first letter,
 * where the match as written begins at its last).
 */
function findSpans(policy: CompiledPolicy, text: string): Span[] {
  const spans = matches(policy, text);
  const folded = foldedView(text);
  if (folded !== undefined) {
    for (const s of matches(policy, folded.text)) {
      const start = folded.at[s.start]!;
      const end = folded.at[s.end]!;
      if (end > start) spans.push({ start, end, sub: s.sub });
    }
  }
  return leftmost(spans);
}

function matches(policy: CompiledPolicy, text: string): Span[] {
  const spans: Span[] = [];
  for (const d of policy.detectors) {
    d.scan(text, (start, end) => spans.push({ start, end, sub: d.sub }));
  }
  if (policy.substitutions !== undefined) {
    const hits: RuleHit<Substitution>[] = [];
    policy.substitutions.findAll(text, hits);
    for (const h of hits) spans.push({ start: h.start, end: h.end, sub: h.meta });
  }
  return spans;
}

/** Spans in order and apart: overlaps keep the leftmost span, and the longer one on a tie. Sorts `spans`. */
function leftmost<S extends Span>(spans: S[]): S[] {
  if (spans.length < 2) return spans;
  spans.sort((a, b) => a.start - b.start || b.end - a.end);
  const kept: S[] = [];
  let end = -1;
  for (const s of spans) {
    if (s.start >= end) {
      kept.push(s);
      end = s.end;
    }
  }
  return kept;
}
