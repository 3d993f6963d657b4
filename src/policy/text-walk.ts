// Walking a request's texts, shared by the chat and Responses input guards:
// text parts of a message, and tool-call arguments, which are JSON text and
// must stay JSON after DLP. Objects are copied only where a text changed,
// never mutated, so a walk that changes nothing returns its input.
export type MapText = (text: string) => string;

/**
 * Members that hold a file's or a recording's bytes in base64 (`file_data`,
 * `input_audio.data`), and base64 data: URLs: no detector reads text in them,
 * and they run to megabytes. Every other string of a part is the caller's
 * text, a URL's query and a `data:text/plain,` URL included.
 */
const BINARY_KEYS: ReadonlySet<string> = new Set(['file_data', 'data']);
const BASE64_URL = /^data:[^,]*;base64,/;

/** The part members left out of the whole walk: its type, and the text key read first. */
const PART_SKIP = new Map<string | undefined, ReadonlySet<string>>();
function partSkip(key: string | undefined): ReadonlySet<string> {
  let skip = PART_SKIP.get(key);
  if (!skip) PART_SKIP.set(key, skip = new Set(key === undefined ? ['type', ...BINARY_KEYS] : ['type', key, ...BINARY_KEYS]));
  return skip;
}

/** A part's members besides its type and text: every string, to one level of object, but no bytes. */
function mapPartMembers(part: Record<string, unknown>, key: string | undefined, f: MapText): Record<string, unknown> {
  const g: MapText = (t) => (BASE64_URL.test(t) ? t : f(t));
  const skip = partSkip(key);
  let out: Record<string, unknown> | undefined;
  for (const k of Object.keys(part)) {
    if (skip.has(k)) continue;
    const v = part[k];
    // An image_url, a file or an input_audio object: its own bytes are skipped too.
    const t = v !== null && typeof v === 'object' && !Array.isArray(v) ? mapOtherMembers(v as Record<string, unknown>, BINARY_KEYS, g) : mapJson(v, g);
    if (t !== v) (out ??= { ...part })[k] = t;
  }
  return out ?? part;
}

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
      const t = f(text);
      if (t !== text) mapped = { ...part, [key!]: t };
    }
    if (whole) mapped = mapPartMembers(mapped, typeof text === 'string' ? key : undefined, f);
    if (mapped !== part) (out ??= parts.slice())[i] = mapped;
  }
  return out ?? (parts as unknown[]);
}

/**
 * JSON values, leaf by leaf: each string, and each number as its text. A
 * number that must be redacted becomes its placeholder string, so the result
 * is still JSON (`{"card":4111…}` → `{"card":"[CARD_1]"}`) where redacting the
 * raw text would have made it unparseable. Keys are left alone.
 */
export function mapJson(value: unknown, f: MapText): unknown {
  if (typeof value === 'string') return f(value);
  if (typeof value === 'number') {
    const text = String(value);
    const t = f(text);
    return t === text ? value : t;
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
    let out: Record<string, unknown> | undefined;
    for (const [k, v] of Object.entries(value)) { const m = mapJson(v, f); if (m !== v) (out ??= { ...value })[k] = m; }
    return out ?? value;
  }
  return value;
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

/** Tool-call arguments are JSON text: mapped value by value when they parse, as one text when they do not. */
export function mapArguments(args: string, f: MapText): string {
  let parsed: unknown;
  try { parsed = JSON.parse(args); } catch { return f(args); }
  if (parsed === null || typeof parsed !== 'object') return f(args);
  const mapped = mapJson(parsed, f);
  return mapped === parsed ? args : JSON.stringify(mapped);
}
