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

/** Headers the connection writes itself, from what it knows of the body and the origin. */
const OWN = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'expect']);

/** The request line and headers, ending with the blank line; throws InvalidRequestError naming what is wrong. */
export function requestHead(method: string, path: string, host: string, headers: Readonly<Record<string, string>>, bodyBytes: number): string {
  if (path[0] !== '/' || BAD_PATH.test(path)) throw new InvalidRequestError('invalid request path');
  let head = `${method} ${path} HTTP/1.1\r\nhost: ${host}\r\n`;
  for (const name in headers) {
    const value = headers[name]!;
    if (!TOKEN.test(name)) throw new InvalidRequestError(`invalid header name ${JSON.stringify(name)}`);
    if (BAD_VALUE.test(value)) throw new InvalidRequestError(`invalid ${name} header`);
    if (OWN.has(name.toLowerCase())) continue;
    head += `${name}: ${value}\r\n`;
  }
  // A GET with no body says nothing of one, as node's and undici's clients send it.
  if (bodyBytes > 0 || method !== 'GET') head += `content-length: ${bodyBytes}\r\n`;
  return `${head}\r\n`;
}
