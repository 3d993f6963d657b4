// The console's static files, read from dist/ui/ into memory once and never
// from disk again. A request names a file only by looking it up in this map,
// so no request path ever reaches the filesystem: there is nothing to traverse.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';

export interface Asset {
  body: Buffer;
  /** Gzip of body, when that is smaller. */
  gzip: Buffer | undefined;
  type: string;
  etag: string;
  /** Hashed names never change content: cache them for a year. index.html must be revalidated. */
  immutable: boolean;
}

export interface ConsoleAssets {
  index: Asset;
  /** By file name under /ui/assets/. */
  assets: ReadonlyMap<string, Asset>;
}

const DIST_UI = fileURLToPath(new URL('../../ui/', import.meta.url));
const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

function asset(body: Buffer, name: string, immutable: boolean): Asset {
  const ext = name.slice(name.lastIndexOf('.'));
  const gz = gzipSync(body, { level: 9 });
  return {
    body,
    gzip: gz.length < body.length ? gz : undefined,
    type: TYPES[ext] ?? 'application/octet-stream',
    etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
    immutable,
  };
}

/** Undefined when the console was not built (dist/ui/ missing): /ui then says how to build it. */
export function loadConsoleAssets(dir = DIST_UI): ConsoleAssets | undefined {
  if (!existsSync(`${dir}/index.html`)) return undefined;
  const assets = new Map<string, Asset>();
  const assetDir = `${dir}/assets`;
  if (existsSync(assetDir)) {
    for (const name of readdirSync(assetDir)) assets.set(name, asset(readFileSync(`${assetDir}/${name}`), name, true));
  }
  return { index: asset(readFileSync(`${dir}/index.html`), 'index.html', false), assets };
}
