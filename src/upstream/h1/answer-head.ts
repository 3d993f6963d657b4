// An answer's head as llhttp hands it over: the head's latin1 text and, per
// header, where its name and value sit in it; and the upstream's keep-alive
// timeout read from it.
//
// Nothing is cut, lower-cased or stored by name until a reader asks. An
// object of the headers (a slice per name and per value, each name lower-cased
// and hashed into the object, and the adapter's for-in over all of it) cost
// about 1.7k instructions a header: a JSON request with OpenAI's twenty-odd
// (rate limits, ids, timings, its CDN's) 285k against 251k read in place. Of
// those sluice reads at most the length, the keep-alive, retry-after and the
// six rate limits it passes back.

/** An upstream sends the same keep-alive header on every answer: the last one read is remembered. */
let lastKeepAlive = { value: '', ms: undefined as number | undefined };

export function keepAliveTimeout(value: string): number | undefined {
  if (value !== lastKeepAlive.value) {
    const m = /timeout=(\d+)/i.exec(value);
    lastKeepAlive = { value, ms: m ? Number(m[1]) * 1000 : undefined };
  }
  return lastKeepAlive.ms;
}

/** An ASCII letter's lower case (header names are compared without case, as HTTP does). */
function lower(c: number): number {
  return c >= 65 && c <= 90 ? c | 32 : c;
}

/**
 * Header names in lower case, by length: a header is compared only with the
 * names of its own length. Compared with all eight rate-limit names, each of
 * an answer's twenty-odd headers cost what the cuts and case conversions had
 * (262.0k instructions a JSON request against 262.5k).
 */
export class NameSet {
  readonly byLength: Array<readonly string[] | undefined> = [];

  constructor(names: readonly string[]) {
    for (const name of names) {
      while (this.byLength.length <= name.length) this.byLength.push(undefined);
      this.byLength[name.length] = [...(this.byLength[name.length] ?? []), name];
    }
  }
}

export class AnswerHead {
  static readonly EMPTY = new AnswerHead('', []);

  /**
   * `spans` holds four offsets per header, in the order read: its name's
   * start and end in `text`, then its value's (whitespace around the value
   * already left out).
   */
  constructor(private readonly text: string, private readonly spans: readonly number[]) {}

  /** How many headers the head has (a repeated one counts each time). */
  get size(): number {
    return this.spans.length >> 2;
  }

  /** Header `i`'s name, in lower case. */
  name(i: number): string {
    return this.text.slice(this.spans[4 * i], this.spans[4 * i + 1]).toLowerCase();
  }

  value(i: number): string {
    return this.text.slice(this.spans[4 * i + 2], this.spans[4 * i + 3]);
  }

  /** Whether header `i`'s name is `name` (given in lower case), compared in place. */
  nameIs(i: number, name: string): boolean {
    return this.spans[4 * i + 1]! - this.spans[4 * i]! === name.length && this.startsWith(i, name);
  }

  /** Whether header `i`'s name starts with `prefix` (given in lower case), compared in place. */
  nameStartsWith(i: number, prefix: string): boolean {
    return this.spans[4 * i + 1]! - this.spans[4 * i]! >= prefix.length && this.startsWith(i, prefix);
  }

  /**
   * Header `i`'s name as the one of `names` it is, or undefined. The set's own
   * string, not a slice of the head lower-cased: a reader that keeps names (the
   * rate limits passed back) gets them without a cut or a case conversion
   * (about 700 instructions a header), and compares them later by pointer.
   */
  nameAmong(i: number, names: NameSet): string | undefined {
    const length = this.spans[4 * i + 1]! - this.spans[4 * i]!;
    const candidates = length < names.byLength.length ? names.byLength[length] : undefined;
    if (candidates === undefined) return undefined;
    for (const name of candidates) if (this.startsWith(i, name)) return name;
    return undefined;
  }

  /**
   * The first value of header `name` (given in lower case). The headers sluice
   * asks for by name have one value (llhttp refuses a repeated content-length;
   * node keeps the first of a repeated retry-after); a reader of a list
   * header goes through them by place.
   */
  get(name: string): string | undefined {
    for (let i = 0; i < this.size; i++) if (this.nameIs(i, name)) return this.value(i);
    return undefined;
  }

  private startsWith(i: number, prefix: string): boolean {
    const at = this.spans[4 * i]!;
    for (let k = 0; k < prefix.length; k++) if (lower(this.text.charCodeAt(at + k)) !== prefix.charCodeAt(k)) return false;
    return true;
  }
}
