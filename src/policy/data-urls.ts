// Base64 data: URLs in a request's parts. An image's or a recording's bytes
// hold no text a detector reads, and run to megabytes, so they are not read.
// A text file's are: Gemini reads an inline `text/plain` part, and OpenAI an
// `input_file` of text, so such a URL is decoded, read, and encoded again
// where DLP changed it (until 2026-11-29 every base64 URL was skipped, and a
// card number or an attack went upstream in a `data:text/plain;base64,`).
// A type not known for text is read if its bytes are text; other documents
// (a PDF) are binary here: sluice has no reader for them.
import { TextDecoder } from 'node:util';
import type { MapText } from './text-walk.js';

/** A data: URL whose payload is base64 through to its end, in either alphabet (Gemini takes the URL-safe one too), `;base64` in any case. */
const BASE64_URL = /^data:([^,]*);base64,([A-Za-z0-9+/=_\-\s]*)$/i;
/** A data: URL of percent-encoded text. */
const TEXT_URL = /^data:([^,;]*(?:;(?!base64,)[^,;]*)*),(.*%[0-9a-f]{2}.*)$/is;

/** Types whose bytes are not text, whatever they hold: media, and documents a model reads through a parser sluice does not have (PDF, office, archives). */
const MEDIA = /^(?:(?:image|audio|video|font)\/|application\/(?:pdf|zip|gzip|x-gzip|x-tar|x-7z-compressed|x-rar-compressed|msword|vnd\.))/i;

/** Media types whose bytes are text a model reads, whatever they hold. */
const TEXT_MEDIA = /^(?:text\/[^;]*|application\/(?:json|xml|yaml|x-yaml|javascript|x-javascript|ecmascript|x-ndjson|ndjson|csv|x-csv|sql|x-sh|toml|x-www-form-urlencoded)|[a-z0-9.+-]+\/[a-z0-9.-]+\+(?:json|xml|yaml))$/i;

/**
 * Control characters binary bytes decode to (bytes that are not UTF-8 were
 * refused already): text has no NUL, and few of the others. A log's ESC
 * sequences are text.
 */
const CONTROLS = /[\x01-\x08\x0e-\x1a\x1c-\x1f\x7f]/g;
const isBinary = (text: string): boolean => text.includes('\0') || (text.match(CONTROLS)?.length ?? 0) * 20 > text.length;

/** A data: URL this file reads: base64, or percent-encoded text. */
export const isDataUrl = (text: string): boolean => BASE64_URL.test(text) || TEXT_URL.test(text);

/**
 * The text of a base64 data: URL, or undefined when it holds bytes: an
 * image's, a recording's, or any other type's that are not text (a PDF's).
 * Text is read in the charset the URL names, else in UTF-8; a type not known
 * for text (a source file's `application/x-python`, `application/octet-stream`)
 * is text if its bytes are UTF-8 without control characters.
 */
function textOf(type: string, charset: string | undefined, payload: string): string | undefined {
  if (MEDIA.test(type)) return undefined;
  const bytes = Buffer.from(payload, 'base64');
  if (charset !== undefined || TEXT_MEDIA.test(type)) {
    let decoder: TextDecoder;
    try { decoder = new TextDecoder(charset ?? 'utf-8'); } catch { decoder = new TextDecoder('utf-8'); }
    return decoder.decode(bytes);
  }
  let text: string;
  try { text = new TextDecoder('utf-8', { fatal: true }).decode(bytes); } catch { return undefined; }
  return isBinary(text) ? undefined : text;
}

/**
 * A base64 data: URL with `f` applied to its text when it holds text;
 * encoded again, in UTF-8 and the standard alphabet, only where `f` changed
 * the text. Any other URL as it is.
 */
export function mapDataUrl(url: string, f: MapText): string {
  const m = BASE64_URL.exec(url);
  if (!m) return mapTextUrl(url, f);
  const params = m[1]!.split(';').map((p) => p.trim());
  const charset = params.find((p) => /^charset=/i.test(p))?.slice(8).replace(/^"|"$/g, '') || undefined;
  const text = textOf(params[0]!, charset, m[2]!);
  if (text === undefined) return url;
  const t = f(text);
  if (t === text) return url;
  const kept = params.filter((p) => !/^charset=/i.test(p));
  return `data:${[...kept, 'charset=utf-8'].join(';')};base64,${Buffer.from(t, 'utf8').toString('base64')}`;
}

/**
 * A percent-encoded data: URL (`data:text/plain,card%204111…`) with `f`
 * applied to its text decoded, encoded again where it changed; any other
 * string as it is. Media types are not read.
 */
function mapTextUrl(url: string, f: MapText): string {
  const m = TEXT_URL.exec(url);
  if (!m || MEDIA.test(m[1]!.split(';')[0]!.trim())) return url;
  let text: string;
  try { text = decodeURIComponent(m[2]!); } catch { return url; }
  const t = f(text);
  return t === text ? url : `data:${m[1]},${encodeURIComponent(t)}`;
}

/** A member that holds bytes (`file_data`, an audio's `data`): read only as a text data: URL, never as raw base64. */
export function mapBytes(value: unknown, f: MapText): unknown {
  return typeof value === 'string' ? mapDataUrl(value, f) : value;
}
