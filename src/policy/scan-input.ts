// Input guarding for one request: shield blocks first, then every DLP and
// shield-redact substitution, applied to all of the request's texts with one
// numbering so that a value seen twice, in any text, gets the same placeholder.
// Pure and synchronous: the engine runs it inline and the worker runs it as is.
import type { CompiledPolicy, Substitution } from './compile.js';
import type { RuleHit } from './rule-set.js';
import type { InputScan } from './types.js';

export type ScanOutcome =
  | { blocked: false; scan: InputScan }
  | { blocked: true; rule: string };

interface Span {
  start: number;
  end: number;
  sub: Substitution;
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

export function scanTexts(policy: CompiledPolicy, texts: readonly string[]): ScanOutcome {
  if (policy.blocks !== undefined) {
    for (const text of texts) {
      const rule = policy.blocks.firstRule(text);
      if (rule !== undefined) return { blocked: true, rule };
    }
  }
  const numbering = new Numbering();
  const byType: Record<string, number> = {};
  let redactions = 0;
  const out = texts.map((text) => {
    const spans = findSpans(policy, text);
    if (spans.length === 0) return text;
    let result = '';
    let at = 0;
    for (const s of spans) {
      const value = text.slice(s.start, s.end);
      result += text.slice(at, s.start) + (s.sub.replacement ?? numbering.placeholder(s.sub.label, value));
      at = s.end;
      redactions++;
      byType[s.sub.type] = (byType[s.sub.type] ?? 0) + 1;
    }
    return result + text.slice(at);
  });
  return { blocked: false, scan: { texts: out, redactions, byType } };
}

/**
 * All matchers run over the original text, never over each other's output, so a
 * placeholder cannot be re-matched. Overlaps keep the leftmost span, and the
 * longer one on a tie.
 */
function findSpans(policy: CompiledPolicy, text: string): Span[] {
  const spans: Span[] = [];
  for (const d of policy.detectors) {
    d.scan(text, (start, end) => spans.push({ start, end, sub: d.sub }));
  }
  if (policy.substitutions !== undefined) {
    const hits: RuleHit<Substitution>[] = [];
    policy.substitutions.findAll(text, hits);
    for (const h of hits) spans.push({ start: h.start, end: h.end, sub: h.meta });
  }
  if (spans.length < 2) return spans;
  spans.sort((a, b) => a.start - b.start || b.end - a.end);
  const kept: Span[] = [];
  let end = -1;
  for (const s of spans) {
    if (s.start >= end) {
      kept.push(s);
      end = s.end;
    }
  }
  return kept;
}
