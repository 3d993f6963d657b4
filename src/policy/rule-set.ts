// Organisation-supplied patterns and term lists, always on RE2 so that no
// tenant regex can backtrack: RE2 runs in time linear in the text whatever
// the pattern. A RuleSet keeps one RE2.Set over all its rules as a
// prefilter: a single pass says which rules match at all, and only those are
// run again for positions. Most texts match nothing, so most texts cost one
// pass instead of one per rule.
import RE2 from 're2';
import { isHighSurrogate } from './text-reader.js';

/** One rule as compiled: an RE2 source plus whatever the caller attaches to it. */
export interface RuleSpec<M> {
  readonly source: string;
  readonly meta: M;
  /**
   * A term list's terms, each as a source of its own, for firstAccepted: one
   * alternation finds the first term that matches where a match begins, and
   * hides a shorter one there ("a bomb recipe" hides "bomb").
   */
  readonly alternatives?: readonly string[];
}

export interface RuleHit<M> {
  readonly meta: M;
  readonly start: number;
  readonly end: number;
}

export class RuleSet<M> {
  readonly #set: InstanceType<typeof RE2.Set>;
  readonly #regexes: RE2[];
  readonly #metas: M[];
  /** Per rule, its terms' regexes where it lists terms (firstAccepted), else its own. */
  readonly #each: RE2[][];

  constructor(rules: readonly RuleSpec<M>[]) {
    this.#set = new RE2.Set(rules.map((r) => r.source));
    this.#regexes = rules.map((r) => new RE2(r.source, 'g'));
    this.#metas = rules.map((r) => r.meta);
    this.#each = rules.map((r, i) => (r.alternatives && r.alternatives.length > 1 ? r.alternatives.map((a) => new RE2(a, 'g')) : [this.#regexes[i]!]));
  }

  /**
   * Which rules match anywhere. The text goes to the set as UTF-8 bytes: node-re2
   * converts a string for RE2.Set far more slowly than Buffer.from does (a
   * 300-character prompt: 2.4 µs against 0.9 with the copy), and the set's
   * answer, rule indices, does not depend on how offsets would be counted.
   */
  #matching(text: string): number[] {
    return this.#set.match(Buffer.from(text, 'utf8'));
  }

  /** Every non-overlapping match of every rule, in rule order (callers sort by position). */
  findAll(text: string, out: RuleHit<M>[]): void {
    for (const i of this.#matching(text)) this.#collect(i, text, out);
  }

  /** The first rule, in config order, that matches anywhere; ties in config order keep verdicts stable. */
  firstRule(text: string): M | undefined {
    const hits = this.#matching(text);
    if (hits.length === 0) return undefined;
    return this.#metas[Math.min(...hits)];
  }

  /**
   * The first rule with a match accepted by `accept` (chunked moderation uses it
   * to ignore matches that lie wholly in already-released context).
   */
  firstAccepted(text: string, accept: (start: number, end: number) => boolean): M | undefined {
    const indices = this.#matching(text).sort((a, b) => a - b);
    for (const i of indices) {
      // Each term of a list by itself, and each match's next search one character on rather than
      // after it: a match refused here (at the edge of what has arrived, say) may hide one that would
      // be accepted, inside it or overlapping it ("a bomb recipe" hides "bomb"; until 2026-11-29 the
      // search went on after the refused match, and a chunked stream of "a bomb recipes" passed).
      for (const re of this.#each[i]!) {
        re.lastIndex = 0;
        for (let m = re.exec(text); m !== null; m = re.exec(text)) {
          if (accept(m.index, m.index + m[0].length)) return this.#metas[i];
          re.lastIndex = m.index + (isHighSurrogate(text.charCodeAt(m.index)) ? 2 : 1);
        }
      }
    }
    return undefined;
  }

  #collect(i: number, text: string, out: RuleHit<M>[]): void {
    const re = this.#regexes[i]!;
    const meta = this.#metas[i]!;
    re.lastIndex = 0;
    for (let m = re.exec(text); m !== null; m = re.exec(text)) {
      // An empty match replaces nothing; step past it so the loop advances.
      if (m[0].length === 0) re.lastIndex++;
      else out.push({ meta, start: m.index, end: m.index + m[0].length });
    }
  }
}

/** Compiles a pattern the way RuleSet will; the message is RE2's, for config errors. */
export function re2Error(source: string): string | undefined {
  try {
    new RE2(source, 'g');
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/** True when the (valid) pattern can match zero characters. */
export function matchesEmpty(source: string): boolean {
  return new RE2(`^(?:${source})$`).test('');
}

/**
 * A term list as one RE2 alternation. Terms match as whole words where they
 * begin or end with a word character (so "kill" does not fire on "skill"),
 * and anywhere otherwise, since RE2's \b is ASCII-only.
 */
export function termsSource(terms: readonly string[], caseSensitive: boolean): string {
  const alts = terms.map((t) => {
    const body = t.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&');
    const head = /^\w/.test(t) ? '\\b' : '';
    const tail = /\w$/.test(t) ? '\\b' : '';
    return head + body + tail;
  });
  return `${caseSensitive ? '' : '(?i)'}(?:${alts.join('|')})`;
}
