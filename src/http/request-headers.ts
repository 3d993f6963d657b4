// The request headers sluice reads, copied at accept time by both servers (a
// uWS request lives only for its callback). Only these: copying every header
// cost the gateway about 2.7k instructions a header (two strings made in C++,
// a call into JavaScript, and a keyed store that internalises the name), and
// the official SDKs send about sixteen (user-agent, accept, a dozen
// x-stainless-*): 227.6k instructions a JSON request against about 193k with the
// bench's four. A header the pipeline starts to read is added here; the type
// makes reading any other one a compile error.
export const REQUEST_HEADERS = [
  'authorization', 'content-length', 'connection', 'host', 'accept-encoding', 'x-forwarded-proto',
  'gateway-dry-run', 'gateway-trace', 'if-none-match',
] as const;

export type RequestHeaderName = (typeof REQUEST_HEADERS)[number];

/** Lower-case names; a header the request did not send (or sent empty) is undefined. */
export type RequestHeaders = Readonly<Record<RequestHeaderName, string | undefined>>;

/**
 * The headers from `get` (a server's lookup by lower-case name), as one object
 * literal: every request's headers have the same hidden class, so the stages
 * that read them stay monomorphic. `If-None-Match` is read only for a GET or
 * HEAD (`cacheable`): only the console's files answer it, and a completion
 * should not pay the lookup.
 */
export function requestHeaders(get: (name: RequestHeaderName) => string | undefined, cacheable: boolean): RequestHeaders {
  return {
    authorization: get('authorization'),
    'content-length': get('content-length'),
    connection: get('connection'),
    host: get('host'),
    'accept-encoding': get('accept-encoding'),
    'x-forwarded-proto': get('x-forwarded-proto'),
    'gateway-dry-run': get('gateway-dry-run'),
    'gateway-trace': get('gateway-trace'),
    'if-none-match': cacheable ? get('if-none-match') : undefined,
  };
}
