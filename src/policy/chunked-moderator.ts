// Output moderation for one stream in chunked mode: text is released as soon
// as no rule can still match across it.
//
// The window. Let L be the longest match any rule can make: for a term list
// the longest term (UTF-16 units), for a pattern its declared `max_length`
// (the schema refuses chunked-mode patterns without one). The moderator holds
// back the last L characters of what it has seen, and scans the held text
// (plus up to L already-released characters before it, so \b sees its
// left-hand context) after every push:
//   - a match that starts in released text and ends in text not seen yet
//     would be longer than L, so nothing released can be part of a match;
//   - a match that ends exactly at the edge of what has arrived is not yet
//     trusted ("kill" may become "killer" under \bkill\b), so it stays held:
//     that is why the window is L and not L - 1;
//   - finish() scans once more with the edge trusted and releases the rest.
// Each push scans at most 2L + chunk characters, so a stream costs O(n).
//
// The reader's reading. Text is also read as its reader reads it
// (text-reader.ts: JSON escapes decoded, invisible characters dropped,
// look-alike letters and spaces folded), piece by piece as it comes, and L
// counts the characters of that reading too: `bo\u006db` is 4 of them, so
// the window holds back all 9 of its own, and so with "b\u200bomb" (until
// 2026-11-29 text was read only as written, and a term spelled so passed).
// Both readings are scanned only from L characters before what each push
// added: the text held back can run long (invisible characters between two
// letters hold the window open), and a stream must still cost O(n). Held
// text past MAX_HELD characters, which only such padding can make, is
// refused as unreadable rather than released.
import type { CompiledPolicy, ModerationRule } from './compile.js';
import { readsAsWritten, TextReader } from './text-reader.js';
import type { ChunkStep, ChunkedModerator } from './types.js';

/** Text held back past this is refused: see the top of this file. */
export const MAX_HELD = 1 << 20;
const UNREADABLE: ModerationRule = { rule: 'held_text_cap', category: 'unreadable' };

export class WindowedModerator implements ChunkedModerator {
  readonly #policy: CompiledPolicy;
  readonly #reader = new TextReader(true);
  /** Released text kept for left context, as written and as read; never released again. */
  #context = '';
  #contextRead = '';
  /** Text not yet released; how far into it the reader has read; what it read, and where each read character began. */
  #held = '';
  #readTo = 0;
  #heldRead = '';
  #heldAt: number[] = [];
  /**
   * Everything so far read as written (printable ASCII, single spaces, no
   * backslash: most streams): the reading is the text itself, and is not
   * made. The first piece that reads otherwise makes it from there on.
   */
  #plain = true;
  #blocked: ChunkStep | undefined;

  constructor(policy: CompiledPolicy) {
    this.#policy = policy;
  }

  push(text: string): ChunkStep {
    if (this.#blocked !== undefined) return this.#blocked;
    if (this.#plain && !readsAsWritten(text, (this.#held || this.#context).slice(-1))) this.#startReading();
    const edge = this.#held.length;
    const readEdge = this.#heldRead.length;
    this.#held += text;
    if (!this.#plain) this.#read(false);
    const hit = this.#scan(edge, readEdge, false);
    if (hit !== undefined) return this.#block(hit);
    if (this.#held.length > MAX_HELD) return this.#block(UNREADABLE);
    return this.#release(this.#cut());
  }

  finish(): ChunkStep {
    if (this.#blocked !== undefined) return this.#blocked;
    const edge = this.#held.length;
    const readEdge = this.#heldRead.length;
    if (!this.#plain) this.#read(true);
    const hit = this.#scan(edge, readEdge, true);
    if (hit !== undefined) return this.#block(hit);
    return this.#release(this.#held.length);
  }

  /** The reading so far is the text as written; the reader goes on from its end. */
  #startReading(): void {
    this.#plain = false;
    this.#contextRead = this.#context;
    this.#heldRead = this.#held;
    this.#heldAt = Array.from({ length: this.#held.length }, (_, i) => i);
    this.#readTo = this.#held.length;
    this.#reader.continueAfter(this.#context + this.#held);
  }

  #read(final: boolean): void {
    const r = this.#reader.read(this.#held, this.#readTo, final, true);
    this.#heldRead += r.text;
    // A loop, not a spread: a piece may be longer than a call's arguments may be.
    for (const a of r.at) this.#heldAt.push(a);
    this.#readTo = r.to;
  }

  /**
   * The first rule with a match that ends past what was scanned before (`edge`
   * of the held text, `readEdge` of what was read of it), or at it, since
   * what ends at the edge was not trusted then ("kill" may become "killer");
   * not at the new edge unless `final`; never wholly in released text.
   */
  #scan(edge: number, readEdge: number, final: boolean): ModerationRule | undefined {
    const rules = this.#policy.moderation;
    if (rules === undefined) return undefined;
    const w = this.#policy.window;
    const scan = (released: string, held: string, heldEdge: number): ModerationRule | undefined => {
      if (held.length === 0) return undefined;
      const text = released + held;
      const edgeAt = released.length + heldEdge;
      // A match is at most L long, so none that ends past the edge begins before L (one more, for \b) ahead of it.
      const from = Math.max(0, edgeAt - w - 1);
      return rules.firstAccepted(text.slice(from), (_start, end) => {
        const e = from + end;
        return e >= edgeAt && e > released.length && (final || e < text.length);
      });
    };
    const hit = scan(this.#context, this.#held, edge);
    if (hit !== undefined || this.#plain || (this.#heldRead === this.#held && this.#contextRead === this.#context)) return hit;
    return scan(this.#contextRead, this.#heldRead, readEdge);
  }

  /**
   * Where the held text may be cut: before the last L characters as written,
   * and before all it takes to make the last L characters as read (a run of
   * invisible characters ahead of them may go; one among them stays).
   */
  #cut(): number {
    const w = this.#policy.window;
    if (this.#plain) return this.#held.length - w;
    const keep = this.#heldRead.length - w;
    let cut = keep > 0 ? this.#heldAt[keep]! : this.#heldRead.length === 0 ? this.#readTo : this.#heldAt[0]!;
    cut = Math.min(cut, this.#held.length - w);
    // Never split a surrogate pair: half a character has no UTF-8 encoding.
    if (cut > 0 && isHighSurrogate(this.#held.charCodeAt(cut - 1))) cut--;
    return cut;
  }

  /** Releases the held text before `cut`; what was released becomes the left context of what comes next, after a finish too. */
  #release(cut: number): ChunkStep {
    if (cut <= 0) return { blocked: false, release: '' };
    const release = this.#held.slice(0, cut);
    this.#held = this.#held.slice(cut);
    const w = this.#policy.window;
    this.#context = w > 0 ? (this.#context + release).slice(-w) : '';
    if (this.#plain) return { blocked: false, release };
    this.#readTo -= cut;
    let k = 0;
    while (k < this.#heldAt.length && this.#heldAt[k]! < cut) k++;
    const releasedRead = this.#heldRead.slice(0, k);
    this.#heldRead = this.#heldRead.slice(k);
    this.#heldAt = this.#heldAt.slice(k).map((a) => a - cut);
    this.#contextRead = w > 0 ? (this.#contextRead + releasedRead).slice(-w) : '';
    return { blocked: false, release };
  }

  #block(hit: ModerationRule): ChunkStep {
    this.#held = '';
    this.#heldRead = '';
    this.#heldAt = [];
    this.#blocked = { blocked: true, category: hit.category, rule: hit.rule };
    return this.#blocked;
  }
}

function isHighSurrogate(c: number): boolean {
  return c >= 0xd800 && c <= 0xdbff;
}
