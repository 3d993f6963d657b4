// undici keeps the body a call was given until the call ends: its Request holds
// it for the exchange's life. For a stream that is a UTF-8 copy of the whole
// prompt, held for as long as the model writes (minutes, for a long answer),
// and for a JSON call a second copy beside the text a retry would send again.
// A large body therefore goes as a one-shot async iterable: undici writes it
// with the headers in one corked write, as it writes a Buffer, and the iterable
// lets go of the bytes once it has handed them over. Small bodies stay strings:
// the iterable path costs undici an async loop and its socket listeners (about
// 20-30k instructions a call, 2-3 % of a 32 KB JSON request by callgrind), and
// what it would free is small.
import type { Dispatcher } from 'undici';
import type { UpstreamRequest } from '../domain.js';

/** Bodies of at least this many characters are sent as a OneShotBody. */
export const ONE_SHOT_MIN_CHARS = 16 * 1024;

/** Async, not sync: undici reads a body with for await, which wraps a sync iterator in promises of its own. */
class OneShotBody implements AsyncIterableIterator<Buffer> {
  constructor(private bytes: Buffer | undefined) {}

  [Symbol.asyncIterator](): this { return this; }

  next(): Promise<IteratorResult<Buffer>> {
    const bytes = this.bytes;
    this.bytes = undefined;
    return Promise.resolve(bytes ? { value: bytes, done: false } : { value: undefined, done: true });
  }
}

/**
 * What undici is given for `up`'s body and headers. An iterable carries no
 * length of its own, so its content-length goes in the headers (undici would
 * otherwise send it chunked).
 */
export function dispatchBody(up: UpstreamRequest): { body: Dispatcher.DispatchOptions['body']; headers: Record<string, string> } {
  if (up.body.length < ONE_SHOT_MIN_CHARS) return { body: up.body, headers: up.headers };
  const bytes = Buffer.from(up.body);
  // undici's API documents AsyncIterable bodies (docs/api/Dispatcher.md); its type declaration omits them.
  const body = new OneShotBody(bytes) as unknown as Dispatcher.DispatchOptions['body'];
  return { body, headers: { ...up.headers, 'content-length': String(bytes.length) } };
}
