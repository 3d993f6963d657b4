// The head of an upstream request, as HTTP/1.1 text. Header values come from
// configuration and from adapters that copy some of the caller's input (a
// model name into a Gemini path, say), so every piece is checked here, where
// it becomes wire bytes: a CR or LF that got this far would let one request
// smuggle a second onto the upstream connection.
import { InvalidRequestError } from './errors.js';

/** RFC 9110's token: a header name. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** A field value may hold tab, visible ASCII and obs-text, nothing else (undici's rule). */
const BAD_VALUE = /[^\t\x20-\x7e\x80-\xff]/;
/** A request target with no control character, space or non-latin1 character (undici's rule). */
const BAD_PATH = /[^\x21-\xff]/;
/** What is not ASCII: a head that has none reads the same as latin1 and as UTF-8, and goes in one write with its body. */
const NOT_ASCII = /[^\x00-\x7f]/;

/** Headers the connection writes itself, from what it knows of the body and the origin. */
const OWN = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'expect']);

/**
 * Names and values already checked, and how: a call's headers are mostly the
 * same strings every time (an adapter's names, a provider's credential from
 * configuration), and a regex test is 0.3-0.6k instructions where a lookup of a
 * string seen before is under 0.1k. Bounded for values a caller's input makes
 * up; emptied when full.
 */
const checkedNames = new Map<string, 'own' | 'send'>();
const asciiValues = new Set<string>();
const MAX_CHECKED = 1024;

function nameRole(name: string): 'own' | 'send' {
  let role = checkedNames.get(name);
  if (role !== undefined) return role;
  if (!TOKEN.test(name)) throw new InvalidRequestError(`invalid header name ${JSON.stringify(name)}`);
  role = OWN.has(name.toLowerCase()) ? 'own' : 'send';
  if (checkedNames.size >= MAX_CHECKED) checkedNames.clear();
  checkedNames.set(name, role);
  return role;
}

/** Checks a value; true if it is ASCII. */
function valueIsAscii(name: string, value: string): boolean {
  if (asciiValues.has(value)) return true;
  if (BAD_VALUE.test(value)) throw new InvalidRequestError(`invalid ${name} header`);
  if (NOT_ASCII.test(value)) return false;
  if (asciiValues.size >= MAX_CHECKED) asciiValues.clear();
  asciiValues.add(value);
  return true;
}

export interface RequestHead {
  text: string;
  /** Whether `text` is ASCII only; otherwise it holds obs-text, to be written as latin1. */
  ascii: boolean;
}

/** The request line and headers, ending with the blank line; throws InvalidRequestError naming what is wrong. */
export function requestHead(method: string, path: string, host: string, headers: Readonly<Record<string, string>>, bodyBytes: number): RequestHead {
  if (path[0] !== '/' || BAD_PATH.test(path)) throw new InvalidRequestError('invalid request path');
  // The method is the adapters' own, and the host comes from a parsed URL, which keeps it ASCII.
  let ascii = !NOT_ASCII.test(path);
  let text = `${method} ${path} HTTP/1.1\r\nhost: ${host}\r\n`;
  for (const name in headers) {
    const value = headers[name]!;
    if (nameRole(name) === 'own') {
      if (BAD_VALUE.test(value)) throw new InvalidRequestError(`invalid ${name} header`);
      continue;
    }
    if (!valueIsAscii(name, value)) ascii = false;
    text += `${name}: ${value}\r\n`;
  }
  // A GET with no body says nothing of one, as node's and undici's clients send it.
  if (bodyBytes > 0 || method !== 'GET') text += `content-length: ${bodyBytes}\r\n`;
  return { text: `${text}\r\n`, ascii };
}
