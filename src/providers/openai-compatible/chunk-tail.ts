// One pass over a streamed chunk's text after its head (`"choices":[` on):
// whether it may go out unparsed, and how many UTF-8 bytes of output text it
// holds. Searching the text once per key (indexOf of `"finish_reason":`,
// `"usage":`, `"content":"`...) cost five or six scans of it per chunk, each
// stopping at every quote of the JSON, a tenth of the stream path's
// instructions; this walk reads each character once.
//
// It expects the compact JSON OpenAI-compatible servers write. A key followed
// by anything but a colon, an escaped key, or text it cannot follow answers
// "not plain", and the chunk is then parsed: a wrong "plain" would forward a
// finish or usage unseen, a wrong "not plain" only costs a parse.
import { flatCopy } from '../../flat-copy.js';
import { Char, hasBackslash, stringEnd } from '../json-scan.js';

// Const enums, as in json-scan.ts: literals in the loops, not module cells read at every character.
const enum Letter {
  /** The n of null. */
  N = 110,
  /** The u of \u. */
  U = 117,
}

const enum Key { Other, Text, Finish, Usage }

/** What a key means here, from its text between the quotes. */
function keyKind(s: string, start: number, end: number): Key {
  switch (end - start) {
    case 5: return s.startsWith('usage', start) ? Key.Usage : Key.Other;
    case 7: return s.startsWith('content', start) || s.startsWith('refusal', start) ? Key.Text : Key.Other;
    case 9: return s.startsWith('arguments', start) || s.startsWith('reasoning', start) ? Key.Text : Key.Other;
    case 13: return s.startsWith('finish_reason', start) ? Key.Finish : Key.Other;
    case 17: return s.startsWith('reasoning_content', start) ? Key.Text : Key.Other;
    default: return Key.Other;
  }
}

/** The UTF-8 bytes of the string textEnd last walked: a module slot, not a result object per string. */
let textBytes = 0;

/**
 * Index just past the JSON string opening at `q` (-1 if it is unterminated),
 * counting into `textBytes` the UTF-8 bytes of its value as Buffer.byteLength
 * counts them (a lone surrogate is U+FFFD, 3 bytes).
 */
function textEnd(s: string, q: number): number {
  let bytes = 0;
  const n = s.length;
  for (let i = q + 1; i < n;) {
    const c = s.charCodeAt(i);
    if (c === Char.Quote) { textBytes = bytes; return i + 1; }
    if (c === Char.Backslash) {
      // \uXXXX may be half of a surrogate pair: the string is decoded whole, as a parse would.
      if (s.charCodeAt(i + 1) === Letter.U) return decodedEnd(s, q);
      bytes += 1;
      i += 2;
      continue;
    }
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) { bytes += 4; i += 2; continue; }
    else bytes += 3;
    i++;
  }
  return -1;
}

/** The slow way for a string with a \u escape: find its end, decode it, count. */
function decodedEnd(s: string, q: number): number {
  const end = stringEnd(s, q);
  if (end < 0) return -1;
  try {
    textBytes = Buffer.byteLength(JSON.parse(s.slice(q, end)) as string);
  } catch {
    return -1;
  }
  return end;
}

const PAD_KEY = ',"obfuscation":';

/** Whether s[at..] is a string without escapes and then the object's close: the end of a chunk past its pad. */
function isPad(s: string, at: number): boolean {
  const last = s.length - 1;
  return s.charCodeAt(at) === Char.Quote && s.charCodeAt(last) === Char.CloseBrace && stringEnd(s, at) === last && !hasBackslash(s, at + 1, last - 1);
}

/** Where a chunk's trailing obfuscation value starts, when the chunk ends with one after `from`; else -1. */
function padAt(s: string, from: number): number {
  const key = s.lastIndexOf(PAD_KEY);
  if (key < from) return -1;
  const at = key + PAD_KEY.length;
  return isPad(s, at) ? at : -1;
}

/**
 * Reads one stream's chunks after their head. `bytes` answers -1 unless the
 * text starts with the stream's head `prefix` (up to and including
 * `"choices":[`), every `finish_reason` after it is null or, as a choice's own
 * member, a string, there is at least one (or a usage), and `usage` is absent,
 * null, or an object beside the choices; otherwise the UTF-8 bytes of every
 * content, refusal, reasoning_content, reasoning and arguments string, at any depth (what
 * a reader is shown: the trace's disclosed_bytes). `finished`
 * then says whether a choice's finish reason was a string: a finish chunk goes
 * on unparsed too, and only a reader of its text parses it. So does the usage
 * chunk (`"choices":[],"usage":{…}`): `usageFrom` and `usageTo` then give its
 * top-level usage object's span, to be parsed alone; a usage anywhere else
 * that is not null still answers -1.
 *
 * Nearly every chunk of a stream has the last one's text with only its output
 * changed. After a plain chunk with exactly one text, the next is first tried
 * against that chunk's text before and after the string: if both match byte
 * for byte and the string between them closes exactly where the second part
 * begins, the tokens are the checked chunk's, so is the verdict, and only the
 * new string is read, where a walk reads the whole tail.
 *
 * OpenAI ends every chunk with `"obfuscation":"…"`, random characters of
 * random length (stream_options.include_obfuscation, on by default), so no two
 * chunks of its streams end alike. A learned chunk that ends so keeps its
 * second part only up to that value, and a chunk tried against it must end
 * with a string of its own there: a string, with no escape, and the object's
 * close. Without this every chunk of an OpenAI stream was walked in full.
 */
export class TailReader {
  /** The head the learned text was read under: a new head forgets it. */
  private prefix = '';
  /** The last plain chunk up to and including its one text's opening quote, and from its closing quote on. */
  private before = '';
  private after = '';
  /** `after` stops before the chunk's trailing obfuscation string, which differs from chunk to chunk. */
  private padded = false;
  /** The learned chunk finished a choice. */
  private learnedFinished = false;
  /** Of the last chunk read as plain: whether it finished a choice. */
  finished = false;
  /** Of the last chunk read as plain: where its usage object starts and ends, or -1. */
  usageFrom = -1;
  usageTo = -1;
  /** Of the last full walk: how many text strings, and where the last one opened and closed. */
  private texts = 0;
  private open = 0;
  private close = 0;

  bytes(s: string, prefix: string): number {
    this.usageFrom = -1;
    const before = this.before;
    const after = this.after;
    // The translator hands over the same head string each time: V8 compares it by pointer.
    if (prefix === this.prefix && before !== '' && s.length >= before.length + after.length && s.slice(0, before.length) === before) {
      const close = textEnd(s, before.length - 1) - 1;
      const rest = close + after.length;
      if (close >= 0 && rest <= s.length && s.slice(close, rest) === after && (this.padded ? isPad(s, rest) : rest === s.length)) {
        this.finished = this.learnedFinished;
        return textBytes;
      }
    }
    // Slicing and comparing is far faster in V8 than startsWith.
    const L = prefix.length;
    if (s.length <= L || s.slice(0, L) !== prefix) return -1;
    const n = this.walk(s, L);
    // A chunk with usage is not learned: one read against it would not report that usage.
    if (n >= 0 && this.texts === 1 && this.usageFrom < 0) {
      this.prefix = prefix;
      // Copies, not slices: a slice would keep this chunk's whole text (a large delta, or the
      // rest of the upstream read it came in) for as long as the stream runs.
      this.before = flatCopy(s.slice(0, this.open + 1));
      this.learnedFinished = this.finished;
      const pad = padAt(s, this.close);
      this.padded = pad > 0;
      this.after = flatCopy(s.slice(this.close, this.padded ? pad : s.length));
    }
    return n;
  }

  private walk(s: string, from: number): number {
    let bytes = 0;
    let finishes = 0;
    let finished = false;
    // Nesting below the choices array: a choice's own members are at 1, while the array is open,
    // and the chunk's at -1. A choice is known by where it opened, so that a repeated
    // finish_reason (a parser keeps the last) is left to a parse.
    let depth = 0;
    let inChoices = true;
    let choiceAt = -1;
    let finishedAt = -1;
    let usageKeys = 0;
    let usageFrom = -1;
    let usageTo = -1;
    this.texts = 0;
    const n = s.length;
    for (let i = from; i < n;) {
      const c = s.charCodeAt(i);
      if (c !== Char.Quote) {
        if (c === Char.OpenBrace || c === Char.OpenBracket) { if (depth++ === 0) choiceAt = i; }
        else if ((c === Char.CloseBrace || c === Char.CloseBracket) && --depth === -1) {
          inChoices = false;
          if (usageFrom >= 0 && usageTo < 0) usageTo = i + 1;
        }
        i++;
        continue;
      }
      const end = stringEnd(s, i);
      if (end < 0) return -1;
      const next = s.charCodeAt(end);
      if (next === Char.Colon && hasBackslash(s, i + 1, end - 1)) return -1;
      if (next !== Char.Colon) {
        // A string value; in compact JSON only a separator can follow it.
        if (next !== Char.Comma && next !== Char.CloseBrace && next !== Char.CloseBracket) return -1;
        i = end;
        continue;
      }
      const kind = keyKind(s, i + 1, end - 1);
      const v = end + 1;
      const first = s.charCodeAt(v);
      if (kind === Key.Text && first === Char.Quote) {
        i = textEnd(s, v);
        if (i < 0) return -1;
        bytes += textBytes;
        this.texts++;
        this.open = v;
        this.close = i - 1;
        continue;
      }
      if (kind === Key.Finish) {
        finishes++;
        const own = depth === 1 && inChoices;
        if (own) {
          if (finishedAt === choiceAt) return -1;
          finishedAt = choiceAt;
        }
        if (first === Char.Quote && own) {
          // A choice's finish reason: the string is stepped over, and the chunk noted as finishing.
          i = stringEnd(s, v);
          if (i < 0) return -1;
          finished = true;
          continue;
        }
        if (first !== Letter.N) return -1;
      } else if (kind === Key.Usage && depth === -1) {
        // The chunk's own usage, a member beside its choices: null, or an object the walk goes on
        // into. Once: of a repeated key a parser keeps the last.
        if (usageKeys++ > 0) return -1;
        if (first === Char.OpenBrace) usageFrom = v;
        else if (first !== Letter.N) return -1;
      } else if (kind === Key.Usage && first !== Letter.N) {
        return -1;
      }
      i = v;
    }
    this.finished = finished;
    // A chunk closes its choices and then itself: text whose nesting ends elsewhere is no chunk to vouch for.
    if (depth !== -2 || (finishes === 0 && usageTo < 0)) return -1;
    this.usageFrom = usageFrom;
    this.usageTo = usageTo;
    return bytes;
  }
}
