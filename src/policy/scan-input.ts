// Input guarding for one request: shield blocks first, then every DLP and
// shield-redact substitution, applied to all of the request's texts with one
// numbering so that a value seen twice, in any text, gets the same placeholder.
// Texts the model reads as one (reading-units.ts) are scanned joined as well
// as one by one (scan-units.ts). Pure and synchronous: the engine runs it
// inline and the worker runs it as is.
import type { CompiledPolicy, Substitution } from './compile.js';
import { crossingSpans, probesOf, redactUnit, type Replace, type UnitSpan } from './scan-units.js';
import { blockedBy, findSpans, type Span } from './spans.js';
import { inputView, joinedLinesView } from './text-reader.js';
import type { InputScan } from './types.js';

export type ScanOutcome =
  | { blocked: false; scan: InputScan }
  | { blocked: true; rule: string };

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
  // Each text, and each unit read joined, as a reader sees it: made once for the shield and DLP both.
  const views = texts.map(inputView);
  // With line breaks inside tokens joined too, for the token detectors (text-reader.ts), when any is on.
  const lines = policy.detectors.some((d) => d.lines !== undefined);
  const linesJoined = lines ? texts.map((t, i) => joinedLinesView(t, views[i])) : [];
  const joined = groups.map((members) => probesOf(texts, members, lines));
  const blocks = policy.blocks;
  if (blocks !== undefined) {
    for (let i = 0; i < texts.length; i++) {
      const rule = blockedBy(blocks, texts[i]!, views[i]);
      if (rule !== undefined) return { blocked: true, rule };
    }
    for (const probes of joined) {
      for (const p of probes) {
        const rule = blockedBy(blocks, p.text, p.view);
        if (rule !== undefined) return { blocked: true, rule };
      }
    }
  }
  // Each text's own matches, then those read across texts: a match of a unit read joined that crosses
  // from one of its texts into the next and covers none of theirs (those take precedence: a match of the
  // joined text may run a text's own match into the next, "a@x.io" + "b@x.io" read as "a@x.iob").
  const own = texts.map((t, i) => findSpans(policy, t, views[i], linesJoined[i]));
  const crossing = new Map<number, { members: readonly number[]; spans: UnitSpan[] }>();
  groups.forEach((members, g) => {
    const spans = crossingSpans(policy, texts, members, joined[g]!, own);
    if (spans.length > 0) crossing.set(members[0]!, { members, spans });
  });
  const tally = new Tally();
  const replace: Replace = (sub, value) => tally.replacement(sub, value);
  // In text order, so that placeholders are numbered as the values are first met.
  const out = texts.slice();
  const inUnit = new Set<number>();
  for (let i = 0; i < texts.length; i++) {
    if (inUnit.has(i)) continue;
    const unit = crossing.get(i);
    if (unit === undefined) {
      out[i] = redact(texts[i]!, own[i]!, replace);
      continue;
    }
    const redacted = redactUnit(texts, unit.members, own, unit.spans, replace);
    unit.members.forEach((m, j) => { out[m] = redacted[j]!; inUnit.add(m); });
  }
  return { blocked: false, scan: { texts: out, redactions: tally.redactions, byType: tally.byType } };
}

/** `text` with each span replaced, spans in order and apart. */
function redact(text: string, spans: readonly Span[], replace: Replace): string {
  if (spans.length === 0) return text;
  let result = '';
  let at = 0;
  for (const s of spans) {
    result += text.slice(at, s.start) + replace(s.sub, text.slice(s.start, s.end));
    at = s.end;
  }
  return result + text.slice(at);
}
