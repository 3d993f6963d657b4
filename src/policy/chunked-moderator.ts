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
// Each push scans at most L + 1 + chunk characters (below), so a stream
// costs O(n).
//
// The reader's reading. Text is also read as its reader reads it
// (text-reader.ts: JSON escapes decoded, invisible characters dropped,
// look-alike letters and spaces folded), piece by piece as it comes, and L
// counts the characters of that reading too: `bo\u006db` is 4 of them, so
// the window holds back all 9 of its own, and so with "b\u200bomb" (until
// 2026-11-29 text was read only as written, and a term spelled so passed).
// Both readings are scanned only from L characters before what each push
// added, and the text held back as written is never read whole: it can run
// long (invisible characters between two letters, or a run of line breaks,
// hold the window open), and a stream must still cost O(n). Held text past
// MAX_HELD characters, which only such padding can make, is refused as
// unreadable rather than released. An escape or a surrogate pair a finish
// cuts off is read with what comes after it, as a client joins it.
import type { CompiledPolicy, ModerationRule } from './compile.js';
import { isHighSurrogate, readsAsWritten, TextReader } from './text-reader.js';
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
  /** Text not yet released, as written: only ever appended to and cut, never read whole. */
  #held = '';
  /** The last L + 1 characters of the released context and the held text: what a scan as written reads. */
  #tail = '';
  /** What of the held text was read, and where each read character began in it. */
  #heldRead = '';
  #heldAt: number[] = [];
  /**
   * The characters at the end not read yet: an escape or a surrogate pair cut
   * off. After a finish they have been released, and are read with what comes.
   */
  #unread = '';
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
    if (this.#plain && !readsAsWritten(text, this.#tail.slice(-1))) this.#startReading();
    const w = this.#policy.window;
    const before = this.#tail;
    const heldBefore = this.#held.length;
    const readEdge = this.#heldRead.length;
    this.#held += text;
    this.#tail = (before + text).slice(-(w + 1));
    if (!this.#plain) this.#read(text, heldBefore);
    const hit = this.#scan(before + text, before.length, heldBefore, readEdge, false);
    if (hit !== undefined) return this.#block(hit);
    if (this.#held.length > MAX_HELD) return this.#block(UNREADABLE);
    return this.#release(this.#cut());
  }

  finish(): ChunkStep {
    if (this.#blocked !== undefined) return this.#blocked;
    const hit = this.#scan(this.#tail, this.#tail.length, this.#held.length, this.#heldRead.length, true);
    if (hit !== undefined) return this.#block(hit);
    return this.#release(this.#held.length);
  }

  /** The reading so far is the text as written; the reader goes on from its end. */
  #startReading(): void {
    this.#plain = false;
    this.#contextRead = this.#context;
    this.#heldRead = this.#held;
    this.#heldAt = Array.from({ length: this.#held.length }, (_, i) => i);
    this.#reader.continueAfter(this.#tail);
  }

  /** Reads `text`, pushed at `at` of the held text, after what was left unread. */
  #read(text: string, at: number): void {
    const src = this.#unread + text;
    const r = this.#reader.read(src, false, true);
    const base = at - this.#unread.length;
    this.#heldRead += r.text;
    // A loop, not a spread: a piece may be longer than a call's arguments may be. A character begun before a finish is placed at the start.
    for (const a of r.at) this.#heldAt.push(Math.max(0, base + a));
    this.#unread = src.slice(r.to);
  }

  /**
   * The first rule with a match that ends past what was scanned before, or at
   * its edge, since what ends at the edge was not trusted then ("kill" may
   * become "killer"); not at the new edge unless `final`; never wholly in
   * released text. As written: `text` is the last L + 1 characters before the
   * push and what it added, `edge` where they meet (a match is at most L
   * long, so none that ends past the edge begins before), `heldBefore` the
   * held text's length then. As read: the held reading from `readEdge`.
   */
  #scan(text: string, edge: number, heldBefore: number, readEdge: number, final: boolean): ModerationRule | undefined {
    const rules = this.#policy.moderation;
    if (rules === undefined || this.#held.length === 0) return undefined;
    const w = this.#policy.window;
    const accepting = (released: number, edgeAt: number, end: number) => (e: number) => e >= edgeAt && e > released && (final || e < end);
    const held = edge - Math.min(heldBefore, edge);
    const accept = accepting(held, edge, text.length);
    const hit = rules.firstAccepted(text, (_start, end) => accept(end));
    if (hit !== undefined || this.#plain) return hit;
    const read = this.#contextRead + this.#heldRead;
    const edgeAt = this.#contextRead.length + readEdge;
    const from = Math.max(0, edgeAt - w - 1);
    const acceptRead = accepting(this.#contextRead.length - from, edgeAt - from, read.length - from);
    return rules.firstAccepted(read.slice(from), (_start, end) => acceptRead(end));
  }

  /**
   * Where the held text may be cut: before the last L characters as written,
   * and before all it takes to make the last L characters as read (a run of
   * invisible characters ahead of them may go; one among them stays).
   */
  #cut(): number {
    const w = this.#policy.window;
    const n = this.#held.length;
    if (this.#plain) return n - w;
    const keep = this.#heldRead.length - w;
    let cut = keep > 0 ? this.#heldAt[keep]! : this.#heldRead.length === 0 ? Math.max(0, n - this.#unread.length) : this.#heldAt[0]!;
    if (cut >= n - w) {
      cut = n - w;
      // Never split a surrogate pair: half a character has no UTF-8 encoding. The character lies in the tail.
      if (cut > 0 && isHighSurrogate(this.#tail.charCodeAt(this.#tail.length - w - 1))) cut--;
    }
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
