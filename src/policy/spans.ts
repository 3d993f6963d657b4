// Where a policy's DLP detectors and substitution rules match a text: the
// spans to redact, as written and as a reader sees it (text-reader.ts), and
// the first shield block rule that matches.
import type { CompiledPolicy, Substitution } from './compile.js';
import { acrossLines } from './across-lines.js';
import type { JoinedView, TextView } from './text-reader.js';
import type { RuleHit, RuleSet } from './rule-set.js';

export interface Span {
  start: number;
  end: number;
  sub: Substitution;
}

/** The first block rule that matches the text as written or as a reader sees it (text-reader.ts). */
export function blockedBy(blocks: RuleSet<string>, text: string, folded: TextView | undefined): string | undefined {
  const rule = blocks.firstRule(text);
  if (rule !== undefined) return rule;
  return folded === undefined ? undefined : blocks.firstRule(folded.text);
}

/**
 * All matchers run over the original text, never over each other's output, so a
 * placeholder cannot be re-matched; and over the text as a reader sees it, where
 * that differs (text-reader.ts), a match there placed where it stands as
 * written ("bob＠example.com" whole; "b\u200bob@x.io" from its first letter,
 * where the match as written begins at its last). The token detectors also
 * read `joined`, the text read with line breaks inside tokens joined, where
 * it has any (across-lines.ts).
 */
export function findSpans(policy: CompiledPolicy, text: string, folded: TextView | undefined, joined?: JoinedView): Span[] {
  const spans = matches(policy, text);
  if (folded !== undefined) {
    for (const s of matches(policy, folded.text)) {
      const start = folded.at[s.start]!;
      const end = folded.at[s.end]!;
      if (end > start) spans.push({ start, end, sub: s.sub });
    }
  }
  const own = leftmost(spans);
  if (joined === undefined) return own;
  const { added, replaced } = acrossLines(policy, text, joined, own);
  if (added.length === 0) return own;
  return leftmost([...(replaced.size === 0 ? own : own.filter((o) => !replaced.has(o))), ...added]);
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
export function leftmost<S extends Span>(spans: S[]): S[] {
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
