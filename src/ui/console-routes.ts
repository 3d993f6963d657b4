// GET /ui and /ui/assets/{file}: the console, served by sluice itself. The
// page is a static shell; everything it shows it reads from the public /v1 API
// with the signed-in key, so it has no access a client lacks.
//
// The files are loaded once, on the first request for any of them, and kept in
// memory. The page is locked down by its Content-Security-Policy: scripts and
// styles only from this origin (no inline script), no plugins, no framing.
import Negotiator from 'negotiator';
import { GatewayError } from '../errors.js';
import type { HeaderList } from '../http/types.js';
import type { Handler, Route } from '../pipeline/handle-request.js';
import { loadConsoleAssets, type Asset, type ConsoleAssets } from './console-assets.js';

export const CONSOLE_CSP = [
  "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "connect-src 'self'",
  "font-src 'self'", "object-src 'none'", "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS: HeaderList = [
  ['content-security-policy', CONSOLE_CSP],
  ['x-content-type-options', 'nosniff'],
  ['referrer-policy', 'no-referrer'],
  ['x-frame-options', 'DENY'],
  ['cross-origin-opener-policy', 'same-origin'],
];

let loaded: ConsoleAssets | undefined | null = null;
function assets(): ConsoleAssets | undefined {
  if (loaded === null) loaded = loadConsoleAssets();
  return loaded;
}

const notBuilt = () => new GatewayError('route_not_found', 'The console is not built: run `npm run build`, which bundles ui/ into dist/ui/.');

/**
 * RFC 9110 13.1.2: If-None-Match compares weakly (a `W/` tag matches its strong twin) and `*`
 * matches any. The page is `no-cache`, so a browser revalidates it on every load: a match is a 304
 * with no body, not the page again.
 */
function unchanged(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  for (const tag of ifNoneMatch.split(',')) {
    const t = tag.trim();
    if (t === '*' || (t.startsWith('W/') ? t.slice(2) : t) === etag) return true;
  }
  return false;
}

function serve(a: Asset, req: Parameters<Handler>[2], requestId: string, res: Parameters<Handler>[3]): number {
  const validators: HeaderList = [
    ['cache-control', a.immutable ? 'public, max-age=31536000, immutable' : 'no-cache'],
    ['etag', a.etag],
    ['vary', 'accept-encoding'],
    ['x-request-id', requestId],
    ...SECURITY_HEADERS,
  ];
  if (unchanged(req.headers['if-none-match'], a.etag)) {
    res.send(304, validators);
    return 304;
  }
  // As RFC 9110 reads the header: `gzip;q=0` refuses it, and `GZIP` or `*` accepts it.
  const gzip = a.gzip && new Negotiator({ headers: { 'accept-encoding': req.headers['accept-encoding'] ?? '' } }).encoding(['gzip', 'identity']) === 'gzip';
  res.send(200, [
    ['content-type', a.type],
    ...validators,
    ...(gzip ? [['content-encoding', 'gzip'] as const] : []),
  ], gzip ? a.gzip : a.body);
  return 200;
}

const consolePage: Handler = async (_svc, ctx, req, res) => {
  const a = assets();
  if (!a) throw notBuilt();
  ctx.trace.status_code = serve(a.index, req, ctx.requestId, res);
};

const consoleAsset: Handler = async (_svc, ctx, req, res, [name]) => {
  const a = assets();
  if (!a) throw notBuilt();
  const file = a.assets.get(name!);
  if (!file) throw new GatewayError('route_not_found', 'No such console file.');
  ctx.trace.status_code = serve(file, req, ctx.requestId, res);
};

/** HEAD is served as GET without the body, as on every GET route (handle-request.ts). */
export const consoleRoutes: Route[] = [
  { method: 'GET', pattern: '/ui', handler: consolePage },
  { method: 'GET', pattern: '/ui/assets/:file', handler: consoleAsset },
];
