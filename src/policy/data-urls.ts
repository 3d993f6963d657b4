// Data: URLs in a request's parts. An image's or a recording's bytes
// hold no text a detector reads, and run to megabytes, so they are not read.
// A text file's are: Gemini reads an inline `text/plain` part, and OpenAI an
// `input_file` of text, so such a URL is decoded, read, and encoded again
// where DLP changed it (until 2026-11-29 every base64 URL was skipped, and a
// card number or an attack went upstream in a `data:text/plain;base64,`).
// A type not known for text is read if its bytes are text; other documents
// (a PDF) are binary here: sluice has no reader for them.
import { TextDecoder } from 'node:util';
import type { MapText } from './text-walk.js';

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

/**
 * A data: URL as WHATWG's data: URL processor reads it, which is how fetch
 * and the SDKs' readers decode one: the URL parser strips C0 controls and
 * spaces at either end and drops every tab and line break, and the scheme is
 * in any case; the header up to the first comma, trimmed, is the media type;
 * the body is percent-decoded, then, where the header ends in `;base64`
 * (spaces before `base64` allowed, in any case), decoded as forgiving base64.
 * Until 2026-11-29 a base64 body was taken only without a percent escape, and
 * a URL only as written: `data:text/plain;base64,Y2FyZC%41…` and ` data:…`
 * went upstream unread, and a reader decoded them.
 */
interface DataUrl {
  /** The header without `;base64`: the media type and its parameters. */
  readonly header: string;
  readonly base64: boolean;
  /** The body as written, tabs and line breaks dropped. */
  readonly body: string;
}

const TABS_AND_BREAKS = /[\t\n\r]/g;
const BASE64_HEADER = /;[ ]*base64$/i;
/** Forgiving base64's alphabet, and Gemini's URL-safe one. */
const BASE64_BODY = /^[A-Za-z0-9+/_-]*$/;
const ASCII_SPACE = /[\t\n\f\r ]+/g;
/** A body that may be base64 with escapes, told without decoding it. */
const BASE64_LIKE = /^[A-Za-z0-9+/=_\-\s%]*$/;

/** Where `text` is a data: URL, its header, whether base64, and its body; undefined where it is not one. */
function parseDataUrl(text: string): DataUrl | undefined {
  // Most strings are not data: URLs: told by a character or two.
  let from = 0;
  while (from < text.length && text.charCodeAt(from) <= 0x20) from++;
  if ((text.charCodeAt(from) | 0x20) !== 100 /* d */) return undefined;
  let to = text.length;
  while (to > from && text.charCodeAt(to - 1) <= 0x20) to--;
  let url = from === 0 && to === text.length ? text : text.slice(from, to);
  if (url.includes('\t') || url.includes('\n') || url.includes('\r')) url = url.replace(TABS_AND_BREAKS, '');
  if (!/^data:/i.test(url)) return undefined;
  const comma = url.indexOf(',', 5);
  if (comma < 0) return undefined;
  let header = trimAscii(url.slice(5, comma));
  const base64 = BASE64_HEADER.test(header);
  if (base64) header = trimAscii(header.slice(0, header.lastIndexOf(';')));
  return { header, base64, body: url.slice(comma + 1) };
}

const trimAscii = (s: string): string => s.replace(/^[\t\n\f\r ]+|[\t\n\f\r ]+$/g, '');

const hexValue = (c: number): number => (c >= 48 && c <= 57 ? c - 48 : (c |= 0x20) >= 97 && c <= 102 ? c - 87 : -1);

/** WHATWG's percent-decode: the text's UTF-8 bytes with each `%` and two hex digits read as the byte they name; any other `%` as itself. */
function percentDecode(text: string): Buffer {
  const bytes = Buffer.from(text, 'utf8');
  if (!text.includes('%')) return bytes;
  const out = Buffer.allocUnsafe(bytes.length);
  let n = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    const hi = b === 37 && i + 2 < bytes.length ? hexValue(bytes[i + 1]!) : -1;
    const lo = hi < 0 ? -1 : hexValue(bytes[i + 2]!);
    if (lo < 0) { out[n++] = b; continue; }
    out[n++] = hi * 16 + lo;
    i += 2;
  }
  return out.subarray(0, n);
}

/**
 * A base64 body's bytes: percent-decoded, then forgiving base64 (WHATWG):
 * ASCII whitespace dropped, at most two `=` at the end of a whole group;
 * undefined where that fails. A body with no escape is read as the string it
 * is (an image's runs to megabytes, but is not read: its type says so first).
 */
function base64Bytes(body: string): Buffer | undefined {
  let s = (body.includes('%') ? percentDecode(body).toString('latin1') : body).replace(ASCII_SPACE, '');
  if (s.length % 4 === 0) s = s.endsWith('==') ? s.slice(0, -2) : s.endsWith('=') ? s.slice(0, -1) : s;
  if (s.length % 4 === 1 || !BASE64_BODY.test(s)) return undefined;
  return Buffer.from(s, 'base64');
}

/**
 * The text of bytes of a data: URL's type, or undefined when they are bytes:
 * an image's, a recording's, or any other type's that are not text (a
 * PDF's). Text is read in the charset the URL names, else in UTF-8; a base64
 * body of a type not known for text (a source file's `application/x-python`,
 * `application/octet-stream`) is text if its bytes are UTF-8 without control
 * characters, and a percent-encoded one is text.
 */
function textOf(type: string, charset: string | undefined, bytes: Buffer, base64: boolean): string | undefined {
  if (charset !== undefined || TEXT_MEDIA.test(type) || !base64) {
    let decoder: TextDecoder;
    try { decoder = new TextDecoder(charset ?? 'utf-8'); } catch { decoder = new TextDecoder('utf-8'); }
    return decoder.decode(bytes);
  }
  let text: string;
  try { text = new TextDecoder('utf-8', { fatal: true }).decode(bytes); } catch { return undefined; }
  return isBinary(text) ? undefined : text;
}

/**
 * `url` with `f` applied to its text where it is a data: URL that holds
 * text; encoded again, in UTF-8 (a base64 one in the standard alphabet),
 * only where `f` changed the text. A data: URL of bytes (an image's, a PDF's)
 * as it is. A string that is no data: URL, or one whose base64 body does not
 * decode (no reader decodes it either), goes to `other`: as it is, for a
 * member of bytes; read as text, for any other.
 */
export function mapDataUrl(url: string, f: MapText, other: MapText = (t) => t): string {
  const d = parseDataUrl(url);
  if (d === undefined) return other(url);
  const params = d.header.split(';').map((p) => p.trim());
  // An image's bytes are not read, nor decoded: a body that only looks like base64 is enough, one
  // that does not is read as text. A percent-encoded image (an SVG) is read as written.
  if (MEDIA.test(params[0]!)) return d.base64 && BASE64_LIKE.test(d.body) ? url : other(url);
  const bytes = d.base64 ? base64Bytes(d.body) : percentDecode(d.body);
  if (bytes === undefined) return other(url);
  const charsetAt = params.findIndex((p) => /^charset=/i.test(p));
  const charset = charsetAt < 0 ? undefined : params[charsetAt]!.slice(8).replace(/^"|"$/g, '') || undefined;
  const text = textOf(params[0]!, charset, bytes, d.base64);
  if (text === undefined) return url;
  const t = f(text);
  if (t === text) return url;
  if (d.base64) {
    const kept = params.filter((p) => !/^charset=/i.test(p));
    return `data:${[...kept, 'charset=utf-8'].join(';')};base64,${Buffer.from(t, 'utf8').toString('base64')}`;
  }
  // Percent-encoded: the header as it was, but a charset it named, since the text now goes in UTF-8.
  if (charsetAt >= 0) params[charsetAt] = 'charset=utf-8';
  return `data:${params.join(';')},${encodeURIComponent(t)}`;
}

/** A member that holds bytes (`file_data`, an audio's `data`): read only as a text data: URL, never as raw base64. */
export function mapBytes(value: unknown, f: MapText): unknown {
  return typeof value === 'string' ? mapDataUrl(value, f) : value;
}
