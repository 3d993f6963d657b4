// Whether an upstream chunk's text may go out as written under moderation.
// Moderation reads what JSON.parse kept of a repeated key (the last value);
// a reader's parser may keep the first, so text that repeats a key is sent
// re-serialised instead (json-keys.ts). Walking every chunk's text for that
// cost a buffered stream some 2.5 µs a chunk, so the chunks nearly every
// stream is made of are read off their shape: the one-content shape below
// holds no key twice that moderation reads, and its head is checked once per
// distinct head (a stream repeats one). Any other chunk is walked whole.
import { keysReadOneWay } from '../providers/json-keys.js';

// The shape nearly every streamed chunk has after its head: one choice whose
// delta is only content, not finished.
const ONE_CONTENT = /\{"index":(\d+),"delta":\{"content":"((?:[^"\\]|\\.)*)"\}(?:,"logprobs":null)?,"finish_reason":null\}\]/y;
/**
 * What may follow the choices of such a chunk: only members that hold no
 * reader text (OpenAI's null usage and obfuscation padding). Any other member
 * (a search model's citations) has the chunk read the long way.
 */
const OWN_TAIL = /(?:,"(?:usage|obfuscation|system_fingerprint|service_tier)":(?:null|"(?:[^"\\]|\\.)*"))*\}/y;

/** Whether the text from `at` on is the one-content shape's choices and tail, to its end. */
export function oneContentAt(raw: string, at: number): RegExpExecArray | undefined {
  ONE_CONTENT.lastIndex = at;
  const m = ONE_CONTENT.exec(raw);
  if (!m) return undefined;
  OWN_TAIL.lastIndex = ONE_CONTENT.lastIndex;
  return OWN_TAIL.test(raw) && OWN_TAIL.lastIndex === raw.length ? m : undefined;
}

export class OneWayChunks {
  /** The last head found to read one way. */
  private checkedHead = '';

  /** Whether a chunk's head (its text before the choices, which start at `from`) repeats no key. */
  headReadsOneWay(raw: string, from: number): boolean {
    const head = raw.slice(0, from);
    if (head === this.checkedHead) return true;
    if (!keysReadOneWay(`${head}]}`)) return false;
    this.checkedHead = head;
    return true;
  }

  /** Whether `raw`, a chunk whose choices start at `from` when known, repeats no key. */
  readsOneWay(raw: string, from: number | undefined): boolean {
    if (from !== undefined && oneContentAt(raw, from)) return this.headReadsOneWay(raw, from);
    return keysReadOneWay(raw);
  }
}
