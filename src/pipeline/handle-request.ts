// The front door: matches the path, runs the handler, and is the one place
// that turns a thrown error into a reply, a metric and the trace.
import type { TraceRecord } from '../domain.js';
import { GatewayError } from '../errors.js';
import type { GatewayRequest, GatewayResponse, RequestHandler } from '../http/types.js';
import { sendError } from './reply.js';
import { RequestContext } from './request-context.js';
import type { Services } from './services.js';

export type Handler = (svc: Services, ctx: RequestContext, req: GatewayRequest, res: GatewayResponse, params: string[]) => Promise<void>;

export interface Route {
  method: string;
  /** Path segments; ':param' matches one segment. */
  pattern: string;
  handler: Handler;
  /** Endpoints that reach an upstream get a trace; the rest (listing, management) do not. */
  traced?: TraceRecord['endpoint'];
}

interface Compiled extends Route { parts: string[] }

function match(parts: string[], path: string[]): string[] | undefined {
  if (parts.length !== path.length) return undefined;
  const params: string[] = [];
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    if (p.startsWith(':')) params.push(decodeURIComponent(path[i]!));
    else if (p !== path[i]) return undefined;
  }
  return params;
}

export interface LifecycleHooks {
  /** False once draining: new requests on kept-alive connections are turned away. */
  accepting(): boolean;
  begin(): void;
  end(): void;
}

export function createRequestHandler(svc: Services, routes: readonly Route[], hooks: LifecycleHooks): RequestHandler {
  const compiled: Compiled[] = routes.map((r) => ({ ...r, parts: r.pattern.split('/').filter(Boolean) }));
  const exact = new Map(compiled.filter((r) => !r.pattern.includes(':')).map((r) => [`${r.method} ${r.pattern}`, r]));

  function find(req: GatewayRequest): { route: Compiled; params: string[] } | GatewayError {
    const hit = exact.get(`${req.method} ${req.path}`);
    if (hit) return { route: hit, params: [] };
    const segs = req.path.split('/').filter(Boolean);
    let pathKnown = false;
    for (const r of compiled) {
      const params = match(r.parts, segs);
      if (!params) continue;
      if (r.method === req.method) return { route: r, params };
      pathKnown = true;
    }
    return pathKnown ? new GatewayError('method_not_allowed') : new GatewayError('route_not_found', `No route for ${req.method} ${req.path}.`);
  }

  return (req, res) => {
    hooks.begin();
    const found = hooks.accepting() ? find(req) : new GatewayError('shutting_down');
    const ctx = new RequestContext(found instanceof GatewayError ? 'chat' : found.route.traced ?? 'chat');
    const run = found instanceof GatewayError ? Promise.reject(found) : found.route.handler(svc, ctx, req, res, found.params);
    run.catch((err) => {
      // Whether a stream was under way must be read before the error reply itself starts the response.
      const midStream = res.started;
      const e = sendError(res, err, ctx.requestId);
      if (e.code === 'unauthorized') svc.metrics.authFailures.inc();
      if (e.code === 'upstream_error' || e.code === 'upstream_timeout') svc.metrics.upstreamErrors.inc({ provider: ctx.trace.provider ?? 'unknown' });
      if (e.code === 'gateway_error') svc.log.error({ err: (e.cause ?? e) as Error, request_id: ctx.requestId }, 'unhandled error');
      if (!midStream || !ctx.trace.status_code) ctx.trace.status_code = res.aborted && !midStream ? 499 : e.status;
      ctx.trace.error_code ??= res.aborted ? 'client_closed' : e.code;
      if (midStream) ctx.trace.stream_aborted = true;
    }).finally(() => {
      // A handler that returned without replying is a bug; the caller still gets an answer rather than a hung socket.
      if (!res.started && !res.aborted) ctx.trace.status_code = sendError(res, new GatewayError('gateway_error', 'No response was produced.'), ctx.requestId).status;
      const endpoint = found instanceof GatewayError ? 'other' : found.route.traced ?? found.route.pattern;
      svc.metrics.requestDone(endpoint, ctx.trace.status_code || (res.aborted ? 499 : 200), ctx.elapsedMs() / 1000);
      if (!(found instanceof GatewayError) && found.route.traced) {
        const trace = ctx.toTrace();
        if (trace) svc.traces.record(trace);
      }
      hooks.end();
    });
  };
}
