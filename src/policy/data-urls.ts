// Base64 data: URLs in a request's parts. An image's or a recording's bytes
// hold no text a detector reads, and run to megabytes, so they are not read.
// A text file's are: Gemini reads an inline `text/plain` part, and OpenAI an
// `input_file` of text, so such a URL is decoded, read, and encoded again
// where DLP changed it (until 2026-11-29 every base64 URL was skipped, and a
// card number or an attack went upstream in a `data:text/plain;base64,`).
// Other documents (a PDF) are binary here: sluice has no reader for them.
import { TextDecoder } from 'node:util';
import type { MapText } from './text-walk.js';

/** A data: URL whose payload is base64 through to its end: a text after a base64 prefix is read as text. */
const BASE64_URL = /^data:([^,]*);base64,([A-Za-z0-9+/=\s]*)$/;

/** Media types whose bytes are text a model reads. */
const TEXT_MEDIA = /^(?:text\/[^;]*|application\/(?:json|xml|yaml|x-yaml|javascript|x-javascript|ecmascript|x-ndjson|ndjson|csv|x-csv|sql|x-sh|toml|x-www-form-urlencoded)|[a-z0-9.+-]+\/[a-z0-9.-]+\+(?:json|xml|yaml))$/i;

export const isBase64Url = (text: string): boolean => BASE64_URL.test(text);

/**
 * A base64 data: URL with `f` applied to its text when its media type is
 * text, read in its charset (UTF-8 unless it says otherwise); encoded again,
 * in UTF-8, only where `f` changed the text. Any other URL as it is.
 */
export function mapDataUrl(url: string, f: MapText): string {
  const m = BASE64_URL.exec(url);
  if (!m) return url;
  const params = m[1]!.split(';').map((p) => p.trim());
  if (!TEXT_MEDIA.test(params[0]!)) return url;
  const charset = params.find((p) => /^charset=/i.test(p))?.slice(8).replace(/^"|"$/g, '') || 'utf-8';
  let decoder: TextDecoder;
  try { decoder = new TextDecoder(charset); } catch { decoder = new TextDecoder('utf-8'); }
  const text = decoder.decode(Buffer.from(m[2]!, 'base64'));
  const t = f(text);
  if (t === text) return url;
  const kept = params.filter((p) => !/^charset=/i.test(p));
  return `data:${[...kept, 'charset=utf-8'].join(';')};base64,${Buffer.from(t, 'utf8').toString('base64')}`;
}

/** A member that holds bytes (`file_data`, an audio's `data`): read only as a text data: URL, never as raw base64. */
export function mapBytes(value: unknown, f: MapText): unknown {
  return typeof value === 'string' ? mapDataUrl(value, f) : value;
}
