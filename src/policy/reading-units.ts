// Which of a request's texts the model reads as one text. A policy scans each
// text, but a phrase or an address split across two of them is read whole:
// the parts of one message follow each other with nothing between; the
// translators merge consecutive turns of one role into one turn (Anthropic's
// and Gemini's alternate), and lift every system message into one system
// text ("\n\n" between them for Anthropic). Until 2026-11-29,
// "Ignore previous " + "instructions." as two parts passed the shield, and
// "bob@" + "example.com" passed DLP. The walkers (message-texts.ts,
// input-texts.ts) say whose turn each message or item is; the units they
// build here are scanned joined as well as one by one (scan-input.ts).

/** Whose turn a message or an item is in, as the translators merge turns; undefined for one that merges with none. */
export type Turn = 'system' | 'user' | 'assistant';

/** A request's texts in walk order, and which of them the model reads as one. */
export interface CollectedTexts { texts: string[]; groups: number[][] }

/**
 * How a message's or an item's own texts are read: with the rest of its turn
 * (a message), as one text of their own (a tool result's parts: every
 * translator joins them, apart from the turn's text), or not at all (a call).
 */
export type Reads = 'turn' | 'alone' | 'none';

export class ReadingUnits {
  readonly #system: number[] = [];
  readonly #runs: number[][] = [];
  /** The turn of the run texts join now, and the run. */
  #turn: Turn | undefined;
  #run: number[] | undefined;
  /** The message or item being walked: its turn, how its texts are read, and its own unit when they are read alone. */
  #next: Turn | undefined;
  #reads: Reads = 'none';
  #alone: number[] | undefined;
  /** The message merges with none: its first text begins a run. */
  #apart = false;

  /**
   * The texts that follow are a message's or an item's of `turn`. A run
   * changes only with a text of another turn: a message with none (an empty
   * assistant message, a reasoning item the translators drop, a call) leaves
   * the run as it was, as it leaves the turns the translators merge. A system
   * message interrupts no run: the translators lift it out of the
   * conversation.
   */
  enter(turn: Turn | undefined, reads: Reads): void {
    this.#next = turn;
    this.#reads = reads;
    this.#alone = undefined;
    this.#apart = turn === undefined;
  }

  /**
   * Text `index`, `text`, was walked; `content` when it is the message's own
   * text (its content string, a text part, a refusal). Blank text is not a
   * turn's: the translators drop it.
   */
  text(index: number, content: boolean | undefined, text: string): void {
    if (content !== true || this.#reads === 'none' || text.trim() === '') return;
    if (this.#reads === 'alone') {
      if (this.#alone === undefined) this.#runs.push(this.#alone = []);
      this.#alone.push(index);
      return;
    }
    if (this.#next === 'system') {
      this.#system.push(index);
      return;
    }
    if (this.#run === undefined || this.#apart || this.#next !== this.#turn) {
      this.#turn = this.#next;
      this.#runs.push(this.#run = []);
      this.#apart = false;
    }
    this.#run.push(index);
  }

  /** The units of two texts or more, each in reading order; every text is in one at most. */
  groups(): number[][] {
    const out = this.#system.length > 1 ? [this.#system] : [];
    for (const run of this.#runs) if (run.length > 1) out.push(run);
    return out;
  }
}
