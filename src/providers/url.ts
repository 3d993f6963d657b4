// Upstream URLs. A provider's base URL and the paths below it are few and fixed,
// so each URL is parsed once: `new URL` and its getters cost microseconds that
// every request would otherwise pay again.

export interface UpstreamUrl {
  readonly origin: string;
  /** Path and query, as the request line carries them. */
  readonly path: string;
  readonly href: string;
}

const cache = new Map<string, UpstreamUrl>();
const MAX_CACHED = 10_000;

/** Appends a path to a configured base URL, whether or not the base ends with a slash. */
export function joinUrl(base: string, path: string): UpstreamUrl {
  const key = `${base}\n${path}`;
  let url = cache.get(key);
  if (!url) {
    const u = new URL(path, base.endsWith('/') ? base : `${base}/`);
    url = Object.freeze({ origin: u.origin, path: u.pathname + u.search, href: u.href });
    // Model names enter Gemini paths; a bound keeps a stream of unknown ones from growing the map forever.
    if (cache.size >= MAX_CACHED) cache.clear();
    cache.set(key, url);
  }
  return url;
}
