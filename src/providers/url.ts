// Upstream URLs. A provider's base URL and the paths below it are few and fixed,
// so each URL is parsed once: `new URL` and its getters cost microseconds that
// every request would otherwise pay again.

export interface UpstreamUrl {
  readonly origin: string;
  /** Path and query, as the request line carries them. */
  readonly path: string;
  readonly href: string;
}

/**
 * By base, then path: both are usually strings V8 has hashed before (the
 * config's base URL, a literal path), where a joined key was a new string
 * whose hash was computed, over its whole length, on every request.
 */
const cache = new Map<string, Map<string, UpstreamUrl>>();
let cached = 0;
const MAX_CACHED = 10_000;

/** Appends a path to a configured base URL, whether or not the base ends with a slash. */
export function joinUrl(base: string, path: string): UpstreamUrl {
  let paths = cache.get(base);
  let url = paths?.get(path);
  if (!url) {
    const u = new URL(path, base.endsWith('/') ? base : `${base}/`);
    url = Object.freeze({ origin: u.origin, path: u.pathname + u.search, href: u.href });
    // Model names enter Gemini paths; a bound keeps a stream of unknown ones from growing the map forever.
    if (cached >= MAX_CACHED) {
      cache.clear();
      cached = 0;
      paths = undefined;
    }
    if (!paths) cache.set(base, (paths = new Map()));
    paths.set(path, url);
    cached++;
  }
  return url;
}
