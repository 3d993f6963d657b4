// Walking a request's texts, shared by the chat and Responses input guards:
// text parts of a message, and tool-call arguments, which are JSON text and
// must stay JSON after DLP. Objects are copied only where a text changed,
// never mutated, so a walk that changes nothing returns its input. Keys are
// texts too: `{"bob@example.com": 1}` would carry an address past a walk of
// values alone (until 2026-11-29 it did).
import { GatewayError } from '../errors.js';
import { keysReadOneWay } from '../providers/json-keys.js';
import { Char, skipSpace, stringEnd } from '../providers/json-scan.js';
import { mapBytes, mapDataUrl } from './data-urls.js';

/**
 * What a walk applies to each text. `content` is set for a message's own
 * text (its content string or a text part), which the model reads joined
 * with its neighbours' (reading-units.ts); every other text is read alone.
 */
export type MapText = (text: string, content?: boolean) => string;

/**
 * Members that hold a file's or a recording's bytes (`file_data`, in a part
 * or its `file`; `data` in an `input_audio`): read only as a text file's
 * data: URL (data-urls.ts), never as raw base64, which runs to megabytes and
 * holds no text. Every other string of a part is the caller's text, a URL's
 * query, a `data:text/plain,` URL and a `data` member anywhere else included
 * (until 2026-11-29 any part's `data` was skipped, and any string that began
 * like a base64 URL, whatever followed).
 */
const FILE_BYTES: ReadonlySet<string> = new Set(['file_data']);
const AUDIO_BYTES: ReadonlySet<string> = new Set(['data', 'file_data']);

/** The part members the walk of its others leaves out: its type and the text key read first. */
const PART_SKIP = new Map<string | undefined, ReadonlySet<string>>();
function partSkip(key: string | undefined): ReadonlySet<string> {
  let skip = PART_SKIP.get(key);
  if (!skip) PART_SKIP.set(key, skip = new Set(key === undefined ? ['type'] : ['type', key]));
  return skip;
}

/** `f`, but a data: URL is read as data-urls.ts says. */
const urlsAware = (f: MapText): MapText => (t) => mapDataUrl(t, f, f);

const NONE: ReadonlySet<string> = new Set();

/**
 * An object's members outside `skip` with `f` applied: those in `bytes` as
 * bytes, the rest as JSON. A part's own object members (an image_url, a file,
 * an input_audio) are walked the same way, one level down, with their bytes.
 */
function mapMembers(o: Record<string, unknown>, bytes: ReadonlySet<string>, f: MapText, skip = NONE, part = false): Record<string, unknown> {
  const g = urlsAware(f);
  let out: Record<string, unknown> | undefined;
  for (const k of Object.keys(o)) {
    if (skip.has(k)) continue;
    const v = o[k];
    const t = bytes.has(k) ? mapBytes(v, f)
      : part && v !== null && typeof v === 'object' && !Array.isArray(v) ? mapMembers(v as Record<string, unknown>, k === 'input_audio' ? AUDIO_BYTES : FILE_BYTES, f)
        : mapJson(v, g);
    if (t !== v) (out ??= { ...o })[k] = t;
  }
  return out ?? o;
}

/** A part's members besides its type and text: every string, to one level of object, bytes as bytes. */
const mapPartMembers = (part: Record<string, unknown>, key: string | undefined, f: MapText): Record<string, unknown> =>
  mapMembers(part, FILE_BYTES, f, partSkip(key), true);

/**
 * Content parts with `f` applied to the text each holds under `keyOf(part)`;
 * with `whole` (a policy's walk), to every other string of every part too,
 * but a file's or a recording's bytes. Parts without any are kept.
 */
export function mapTextParts(parts: readonly unknown[], keyOf: (part: Record<string, unknown>) => string | undefined, f: MapText, whole = false): unknown[] {
  let out: unknown[] | undefined;
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i];
    if (p === null || typeof p !== 'object' || Array.isArray(p)) continue;
    const part = p as Record<string, unknown>;
    const key = keyOf(part);
    const text = key === undefined ? undefined : part[key];
    let mapped = part;
    if (typeof text === 'string') {
      const t = f(text, true);
      if (t !== text) mapped = { ...part, [key!]: t };
    }
    if (whole) mapped = mapPartMembers(mapped, typeof text === 'string' ? key : undefined, f);
    if (mapped !== part) (out ??= parts.slice())[i] = mapped;
  }
  return out ?? (parts as unknown[]);
}

/**
 * A tool's result in parts. Every translator joins its texts with nothing
 * between them, and Gemini's decodes the join as JSON, so a join that is a
 * JSON object or array is read as JSON, value by value with escapes decoded,
 * as a result in one string is: `bob\u0040example.com` would pass a walk of
 * the raw text (until 2026-11-29 it did, in one part or split over two). A
 * redaction leaves the join in the first text part and drops the others.
 * Any other result is read part by part (`f` marks them content: they are
 * read as one, reading-units.ts). The parts' other members are walked alike.
 */
export function mapResultParts(parts: readonly unknown[], keyOf: (part: Record<string, unknown>) => string | undefined, f: MapText, whole: boolean): unknown[] {
  const texts: number[] = [];
  parts.forEach((p, i) => {
    if (p !== null && typeof p === 'object' && !Array.isArray(p)) {
      const key = keyOf(p as Record<string, unknown>);
      if (key !== undefined && typeof (p as Record<string, unknown>)[key] === 'string') texts.push(i);
    }
  });
  const text = (i: number) => { const p = parts[i] as Record<string, unknown>; return p[keyOf(p)!] as string; };
  const joined = texts.map(text).join('');
  if (!isJsonContainer(joined)) return mapTextParts(parts, keyOf, f, whole);
  const mapped = mapJsonText(joined, f);
  // The texts were read joined above: the walk of the parts leaves them as they are.
  const out = mapTextParts(parts, keyOf, (t, content) => (content === true ? t : f(t)), whole);
  if (mapped === joined) return out;
  const first = texts[0]!;
  const p = out[first] as Record<string, unknown>;
  return out.flatMap((q, i) => (i === first ? [{ ...p, [keyOf(p)!]: mapped }] : texts.includes(i) ? [] : [q]));
}

function isJsonContainer(text: string): boolean {
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === 'object';
  } catch {
    return false;
  }
}

/**
 * The text a request's body was parsed from, while a walk of it runs (withSource).
 * JSON.parse rounds a number past 2^53 (4111111111111111110 reads as
 * …000), while an OpenAI-compatible upstream is sent the caller's digits:
 * read as parsed, a 19-digit card in `metadata`, an unknown member or a
 * message's extra member failed Luhn and went upstream whole (until
 * 2026-11-29). Such a number is rare, so the text is searched for the
 * literals that parse to it only when a walk meets one, once a walk.
 */
class NumberSource {
  #rounded: Map<number, string[]> | undefined;
  constructor(private readonly text: string) {}

  /** The literals outside strings that parse to `value` but are not how JavaScript writes it. */
  literals(value: number): readonly string[] {
    this.#rounded ??= roundedLiterals(this.text);
    return this.#rounded.get(value) ?? [];
  }
}

const BEYOND_EXACT = 2 ** 53;

function roundedLiterals(text: string): Map<number, string[]> {
  const found = new Map<number, string[]>();
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === Char.Quote) {
      i = stringEnd(text, i) - 1;
    } else if (c === 45 /* - */ || (c >= 48 && c <= 57)) {
      let end = i + 1;
      while (end < text.length && isNumberChar(text.charCodeAt(end))) end++;
      const literal = text.slice(i, end);
      const n = Number(literal);
      if (Math.abs(n) >= BEYOND_EXACT && String(n) !== literal) {
        const list = found.get(n);
        if (list === undefined) found.set(n, [literal]);
        else if (!list.includes(literal)) list.push(literal);
      }
      i = end - 1;
    }
  }
  return found;
}

let source: NumberSource | undefined;

/** `walk()` with every number past 2^53 that mapJson meets also read as `text`, the body it was parsed from, writes it. */
export function withSource<T>(text: string | undefined, walk: () => T): T {
  const outer = source;
  source = text === undefined ? undefined : new NumberSource(text);
  try {
    return walk();
  } finally {
    source = outer;
  }
}

/**
 * JSON values, leaf by leaf: each key and string, and each number as its
 * text (past 2^53, also as the body's text writes it: withSource). A number that must be redacted becomes its placeholder string, so the
 * result is still JSON (`{"card":4111…}` → `{"card":"[CARD_1]"}`) where
 * redacting the raw text would have made it unparseable. A redacted key keeps
 * its member's place.
 */
export function mapJson(value: unknown, f: MapText): unknown {
  if (typeof value === 'string') return f(value);
  if (typeof value === 'number') {
    // As written first, as mapJsonText reads a number; every reading is made, so a walk's texts are the same each time.
    let changed: string | undefined;
    if (source !== undefined && Math.abs(value) >= BEYOND_EXACT) {
      for (const literal of source.literals(value)) {
        const t = f(literal);
        if (t !== literal) changed ??= t;
      }
    }
    const text = String(value);
    const t = f(text);
    if (t !== text) changed ??= t;
    return changed ?? value;
  }
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    // A loop, not forEach: a frame less per level of nesting.
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      const m = mapJson(v, f);
      if (m !== v) (out ??= value.slice())[i] = m;
    }
    return out ?? value;
  }
  if (value !== null && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    const keys = Object.keys(o);
    let out: Record<string, unknown> | undefined;
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i]!;
      const v = o[k];
      const nk = f(k);
      const m = mapJson(v, f);
      if (out === undefined) {
        if (nk === k && m === v) continue;
        out = {};
        for (let j = 0; j < i; j++) own(out, keys[j]!, o[keys[j]!]);
      }
      if (Object.hasOwn(out, nk) || (nk !== k && Object.hasOwn(o, nk))) throw keyClash(nk);
      own(out, nk, m);
    }
    return out ?? value;
  }
  return value;
}

/** Sets a member as the object's own, a "__proto__" included, rather than its prototype. */
function own(o: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(o, key, { value, writable: true, enumerable: true, configurable: true });
}

function keyClash(key?: string): GatewayError {
  const as = key === undefined ? 'a key' : JSON.stringify(key);
  return new GatewayError('invalid_request', `A key redacted by DLP would become ${as} that its object already has. Rename the key.`);
}

/**
 * `o` with every string (and number) mapped in each of its members outside
 * `skip`, the members known to hold no caller text; `o` itself when nothing
 * changed. The spread copy holds a caller's "__proto__" member as its own, so
 * even that name assigns the member rather than a prototype.
 */
export function mapOtherMembers<T extends Record<string, unknown>>(o: T, skip: ReadonlySet<string>, f: MapText): T {
  let out: T | undefined;
  for (const key of Object.keys(o)) {
    if (skip.has(key)) continue;
    const v = o[key];
    const t = mapJson(v, f);
    if (t !== v) (out ??= { ...o })[key as keyof T] = t as T[keyof T];
  }
  return out ?? o;
}

const LOCATION_READ: ReadonlySet<string> = new Set(['type']);

/**
 * `o` with the strings of its `user_location` mapped, all but the location's
 * `type`: chat's `web_search_options` and a Responses `web_search` tool are
 * settings the application writes, but the city, region, country and
 * timezone in their `user_location` are where the caller says the user is,
 * and go upstream as written (until 2026-11-29 they went unscanned).
 */
export function mapUserLocation<T extends Record<string, unknown>>(o: T, f: MapText): T {
  const loc = o.user_location;
  if (loc === null || typeof loc !== 'object' || Array.isArray(loc)) return o;
  const t = mapOtherMembers(loc as Record<string, unknown>, LOCATION_READ, f);
  return t === loc ? o : { ...o, user_location: t };
}

/**
 * Tool-call arguments are JSON text: mapped key by key and value by value when
 * they parse, as one text when they do not. Mapped in the text, not through a
 * parse: a number is read as written (an id past 2^53 would be read rounded,
 * a 19-digit card with it, and sent rounded if anything else changed), and
 * what is not redacted keeps its bytes.
 */
export function mapArguments(args: string, f: MapText): string {
  return isJsonContainer(args) ? mapJsonText(args, f) : f(args);
}

const isNumberChar = (c: number) => (c >= 48 && c <= 57) || c === 43 || c === 45 || c === 46 || c === 69 || c === 101;

/** `text`, valid JSON, with each key, string and number literal mapped where it stands, in document order. */
export function mapJsonText(text: string, f: MapText): string {
  let out = '';
  let last = 0;
  let renamedKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    let end: number;
    let value: string;
    if (c === Char.Quote) {
      end = stringEnd(text, i);
      value = text.slice(i + 1, end - 1);
      if (value.includes('\\')) value = JSON.parse(text.slice(i, end)) as string;
    } else if (c === 45 /* - */ || (c >= 48 && c <= 57)) {
      end = i + 1;
      while (end < text.length && isNumberChar(text.charCodeAt(end))) end++;
      value = text.slice(i, end);
      // A translator that parses the arguments (Anthropic's, Gemini's) sends the number as
      // JavaScript writes it: 4.111111111111111e15 goes as 4111111111111111. Both are read.
      const written = String(Number(value));
      if (written !== value) {
        const a = f(value);
        const b = f(written);
        if (a !== value || b !== written) {
          out += text.slice(last, i) + JSON.stringify(a !== value ? a : b);
          last = end;
        }
        i = end - 1;
        continue;
      }
    } else {
      continue;
    }
    const t = f(value);
    if (t !== value) {
      out += text.slice(last, i) + JSON.stringify(t);
      last = end;
      if (c === Char.Quote && isKeyEnd(text, end)) renamedKey = true;
    }
    i = end - 1;
  }
  if (last === 0) return text;
  out += text.slice(last);
  // A redacted key that an object already had would leave the key twice, read one way or the other.
  if (renamedKey && keysReadOneWay(text) && !keysReadOneWay(out)) throw keyClash();
  return out;
}

/** Whether the string that ends before `end` is a key: a colon follows it. */
const isKeyEnd = (text: string, end: number): boolean => text.charCodeAt(skipSpace(text, end)) === Char.Colon;
