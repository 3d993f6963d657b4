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
// Other readings. Text that holds a backslash, or characters a reader does
// not see as written (a zero-width space, a full-width letter), is read a
// second time as its reader reads it (text-view.ts), and L counts the
// characters of that reading: `bo\u006db` is 4 of them, so the window holds
// back all 9 of its own, and "b\u200bomb" is 4 (until 2026-11-29 text was
// read only as written, and a term spelled so passed).
import type { CompiledPolicy, ModerationRule } from './compile.js';
import { outputView, viewIndex } from './text-view.js';
import type { ChunkStep, ChunkedModerator } from './types.js';

export class WindowedModerator implements ChunkedModerator {
  readonly #policy: CompiledPolicy;
  /** Released text kept for left context; never released again. */
  #context = '';
  #held = '';
  #blocked: ChunkStep | undefined;

  constructor(policy: CompiledPolicy) {
    this.#policy = policy;
  }

  push(text: string): ChunkStep {
    if (this.#blocked !== undefined) return this.#blocked;
    this.#held += text;
    const hit = this.#scan(false);
    if (hit !== undefined) return this.#block(hit);
    let cut = this.#cut();
    if (cut <= 0) return { blocked: false, release: '' };
    // Never split a surrogate pair: half a character has no UTF-8 encoding.
    if (isHighSurrogate(this.#held.charCodeAt(cut - 1))) cut--;
    const release = this.#held.slice(0, cut);
    this.#held = this.#held.slice(cut);
    this.#remember(release);
    return { blocked: false, release };
  }

  finish(): ChunkStep {
    if (this.#blocked !== undefined) return this.#blocked;
    const hit = this.#scan(true);
    if (hit !== undefined) return this.#block(hit);
    const release = this.#held;
    this.#held = '';
    this.#remember(release);
    return { blocked: false, release };
  }

  /** Released text becomes the left context of what comes next, after a finish too (a trail's next piece: chunked-output.ts). */
  #remember(release: string): void {
    const w = this.#policy.window;
    this.#context = w > 0 ? (this.#context + release).slice(-w) : '';
  }

  /** Where the held text's last L characters begin, L counted in its reader's view when that differs. */
  #cut(): number {
    const w = this.#policy.window;
    const view = outputView(this.#held);
    if (view === undefined) return this.#held.length - w;
    return view.text.length <= w ? 0 : view.at[view.text.length - w]!;
  }

  #scan(final: boolean): ModerationRule | undefined {
    const rules = this.#policy.moderation;
    if (rules === undefined || this.#held.length === 0) return undefined;
    const from = this.#context.length;
    const text = this.#context + this.#held;
    const hit = rules.firstAccepted(text, (_start, end) => end > from && (final || end < text.length));
    const view = hit === undefined ? outputView(text) : undefined;
    if (view === undefined) return hit;
    const held = viewIndex(view, from);
    return rules.firstAccepted(view.text, (_start, end) => end > held && (final || end < view.text.length));
  }

  #block(hit: ModerationRule): ChunkStep {
    this.#held = '';
    this.#blocked = { blocked: true, category: hit.category, rule: hit.rule };
    return this.#blocked;
  }
}

function isHighSurrogate(c: number): boolean {
  return c >= 0xd800 && c <= 0xdbff;
}
