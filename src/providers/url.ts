/** Appends a path to a configured base URL, whether or not the base ends with a slash. */
export function joinUrl(base: string, path: string): URL {
  return new URL(path, base.endsWith('/') ? base : `${base}/`);
}
