// The front door: matches the path, runs the handler, and is the one place
// that turns a thrown error into a reply, a metric and the trace.
import type { TraceRecord } from '../domain.js';
import { answerFault, GatewayError, toGatewayError } from '../errors.js';
import type { GatewayRequest, GatewayResponse, RequestHandler } from '../http/types.js';
import { sendError } from './reply.js';
import { HANDED_OFF, RequestContext } from './request-context.js';
import { authenticate, type Services } from './services.js';
import { settleRequest } from './limits-stage.js';
import { TurnBudget } from './turn-budget.js';

/** Resolves HANDED_OFF when a stream it started ends the request itself (ctx.end). */
export type Handler = (svc: Services, ctx: RequestContext, req: GatewayRequest, res: GatewayResponse, params: string[]) => Promise<void | typeof HANDED_OFF>;

export interface Route {
  method: string;
  /** Path segments; ':param' matches one segment. */
  pattern: string;
  handler: Handler;
  /**
   * The endpoint its trace row names. Every model-API route has one; the
   * management, operational and console routes have none and write no trace.
   */
  traced?: TraceRecord['endpoint'];
}

interface Compiled extends Route { parts: string[] }

// Control characters can be part of no object id, and Postgres refuses NUL in
// text outright: such a parameter names nothing, so it never reaches a query.
const IMPOSSIBLE_ID = /[\u0000-\u001f\u007f]/;

/** A path segment, percent-decoded; a malformed escape is the caller's 400, never a throw past the router. */
function decodeParam(segment: string): string | GatewayError {
  let value: string;
  try {
    value = decodeURIComponent(segment);
  } catch {
    return new GatewayError('invalid_request', 'The path holds a malformed percent-escape.', { param: 'path' });
  }
  return IMPOSSIBLE_ID.test(value) ? new GatewayError('not_found') : value;
}

/**
 * The raw parameters of a path the pattern matches. A last part ending in `*`
 * (`:model*`) takes the rest of the path, slashes and all: a self-hosted
 * model's id is often `org/name`, which a client may send unescaped.
 */
function match(parts: string[], path: string[]): string[] | undefined {
  const rest = parts.at(-1)!.endsWith('*');
  if (rest ? path.length < parts.length : parts.length !== path.length) return undefined;
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    if (!p.startsWith(':') && p !== path[i]) return undefined;
  }
  const params = parts.flatMap((p, i) => (p.startsWith(':') ? [path[i]!] : []));
  if (rest) params[params.length - 1] = path.slice(parts.length - 1).join('/');
  return params;
}

/** What finish() is given when the handler returned rather than threw. */
const SUCCEEDED = Symbol('succeeded');

export interface LifecycleHooks {
  /** False once draining: new requests on kept-alive connections are turned away. */
  accepting(): boolean;
  begin(): void;
  end(): void;
}

export function createRequestHandler(svc: Services, routes: readonly Route[], hooks: LifecycleHooks): RequestHandler {
  const compiled: Compiled[] = routes.map((r) => ({ ...r, parts: r.pattern.split('/').filter(Boolean) }));
  // By path, then method: the path uWS hands over is hashed once, where a joined `${method} ${path}`
  // was a new string to flatten and hash on every request.
  const exact = new Map<string, Compiled[]>();
  for (const r of compiled) {
    if (r.pattern.includes(':')) continue;
    const same = exact.get(r.pattern);
    if (same) same.push(r);
    else exact.set(r.pattern, [r]);
  }
  // RFC 9110 9.1: a method no path takes is a 501, not a 405, whatever the path.
  const known = new Set(compiled.map((r) => r.method)).add('HEAD');
  const budgetMs = svc.config.server.turn_budget_ms;
  const turn = budgetMs > 0 ? new TurnBudget(budgetMs, () => svc.metrics.requestsDeferred.inc()) : undefined;

  type Found = { route: Compiled; params: string[] };

  function exactFor(method: string, path: string): Found | undefined {
    const same = exact.get(path);
    if (same) for (const r of same) if (r.method === method) return { route: r, params: [] };
    return undefined;
  }

  /** The parameterised route for `method` on the path, undefined when there is none, or the error a malformed segment is. */
  function paramRouteFor(method: string, segs: string[]): Found | GatewayError | undefined {
    for (const r of compiled) {
      if (r.method !== method) continue;
      const raw = match(r.parts, segs);
      if (!raw) continue;
      const params: string[] = [];
      for (const seg of raw) {
        const p = decodeParam(seg);
        if (p instanceof GatewayError) return p;
        params.push(p);
      }
      return { route: r, params };
    }
    return undefined;
  }

  /**
   * HEAD is GET without the body wherever no HEAD route of its own exists (RFC 9110: every
   * server supports both), so a load balancer may probe /healthz so; both servers withhold the body.
   */
  function find(req: GatewayRequest): Found | GatewayError {
    const hot = exactFor(req.method, req.path);
    if (hot) return hot;
    const segs = req.path.split('/').filter(Boolean);
    const hit = paramRouteFor(req.method, segs)
      ?? (req.method === 'HEAD' ? exactFor('GET', req.path) ?? paramRouteFor('GET', segs) : undefined);
    if (hit) return hit;
    if (!known.has(req.method)) return new GatewayError('method_not_implemented', `${req.method.slice(0, 20)} is not a method this gateway takes.`);
    const allowed = new Set<string>();
    for (const r of compiled) if (match(r.parts, segs)) allowed.add(r.method).add(r.method === 'GET' ? 'HEAD' : r.method);
    // A 405 names the methods the path has (RFC 9110 asks for Allow), so a client can tell a typo from a wrong verb.
    if (allowed.size > 0) {
      const methods = [...allowed];
      return new GatewayError('method_not_allowed', `${req.method.slice(0, 20)} is not allowed here; use ${methods.join(' or ')}.`, { headers: [['allow', methods.join(', ')]] });
    }
    // The path is echoed back only as far as it is printable and short: it is the caller's raw bytes.
    return new GatewayError('route_not_found', `No route for ${req.method} ${req.path.slice(0, 200)}.`);
  }

  /** Any throw, synchronous or not, becomes a rejected promise: the one catch below then replies. */
  function start(found: ReturnType<typeof find>, refused: GatewayError | undefined, ctx: RequestContext, req: GatewayRequest, res: GatewayResponse): Promise<void | typeof HANDED_OFF> {
    const turnedAway = refused ?? (found instanceof GatewayError ? found : undefined);
    if (turnedAway) return ctx.traced ? refuse(turnedAway, ctx, req) : Promise.reject(turnedAway);
    if (found instanceof GatewayError) return Promise.reject(found);
    try {
      return found.route.handler(svc, ctx, req, res, found.params);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * A request turned away before any handler (no route, a wrong method, the
   * drain) still owes its caller a trace when it has a valid key: the key is
   * read only to name the organisation, and the answer stays the refusal, not a
   * 401, whatever the key. A cache miss waits on the key's lookup; only refused
   * requests take that path, and the drain waits for it.
   */
  function refuse(err: GatewayError, ctx: RequestContext, req: GatewayRequest): Promise<never> {
    if (req.headers.authorization === undefined) return Promise.reject(err);
    let pending: Promise<void> | undefined;
    try {
      pending = authenticate(svc, ctx, req);
    } catch {
      return Promise.reject(err);
    }
    const fail = () => { throw err; };
    return pending ? pending.then(fail, fail) : Promise.reject(err);
  }

  /**
   * The one place a thrown error becomes a reply; `err` is SUCCEEDED when the
   * handler returned. The request is settled (metrics, trace, the drain count)
   * even when its error reply failed.
   */
  function finish(found: ReturnType<typeof find>, ctx: RequestContext, res: GatewayResponse, err: unknown): void {
    if (err !== SUCCEEDED) {
      try {
        replyFailure(ctx, res, err);
      } catch (bug) {
        replyPathFailed(ctx, bug);
      }
    }
    try {
      // A handler that returned without replying is a bug; the caller still gets an answer rather than a hung socket.
      if (!res.started && !res.aborted) ctx.trace.status_code = sendError(res, new GatewayError('gateway_error', 'No response was produced.'), ctx.requestId).status;
      // The caller left before any byte (a stream held back by moderation, say): the trace says so, as the metric does.
      if (!ctx.trace.status_code && res.aborted) ctx.trace.status_code = 499;
      const endpoint = found instanceof GatewayError ? 'other' : found.route.traced ?? found.route.pattern;
      svc.metrics.requestDone(endpoint, ctx.trace.status_code || (res.aborted ? 499 : 200), ctx.elapsedMs() / 1000);
      if (ctx.admission) settleRequest(svc, ctx);
      if (ctx.traced) {
        const trace = ctx.toTrace();
        if (trace) svc.traces.record(trace);
      }
    } catch (bug) {
      replyPathFailed(ctx, bug);
    } finally {
      svc.streams.settle(ctx);
      hooks.end();
    }
  }

  /** Only a bug in the reply path itself lands here; it must not become an unhandled rejection that ends the process. */
  function replyPathFailed(ctx: RequestContext, bug: unknown): void {
    svc.log.error({ err: bug, request_id: ctx.requestId }, 'reply path failed');
  }

  function replyFailure(ctx: RequestContext, res: GatewayResponse, err: unknown): void {
    // Whether a stream was under way must be read before the error reply itself starts the response.
    const midStream = res.started;
    const e = sendError(res, ctx.answered ? answerFault(err) : err, ctx.requestId);
    if (e.code === 'unauthorized') svc.metrics.authFailures.inc();
    if (e.code === 'upstream_error' || e.code === 'upstream_timeout') svc.metrics.upstreamErrors.inc({ provider: ctx.trace.provider ?? 'unknown' });
    if (e.code === 'gateway_error') svc.log.error({ err: (e.cause ?? e) as Error, request_id: ctx.requestId }, 'unhandled error');
    if (!midStream || !ctx.trace.status_code) ctx.trace.status_code = res.aborted && !midStream ? 499 : e.status;
    ctx.trace.error_code ??= res.aborted ? 'client_closed' : e.code;
    if (midStream) ctx.trace.stream_aborted = true;
  }

  /**
   * The trace endpoint of a request, or undefined when it writes none. A path
   * no route takes, or a method it does not, is traced as `other` under /v1/,
   * the model API's prefix: a caller there was given an id to quote.
   */
  function tracedAs(found: ReturnType<typeof find>, path: string): TraceRecord['endpoint'] | undefined {
    if (!(found instanceof GatewayError)) return found.route.traced;
    return path.startsWith('/v1/') ? 'other' : undefined;
  }

  return (req, res) => {
    hooks.begin();
    let found: ReturnType<typeof find>;
    try {
      found = find(req);
    } catch (err) {
      found = toGatewayError(err);
    }
    const endpoint = tracedAs(found, req.path);
    const ctx = new RequestContext(endpoint ?? 'other');
    ctx.traced = endpoint !== undefined;
    // The route is still looked up while draining, so that the refusal is traced under the endpoint asked for.
    const refused = hooks.accepting() ? undefined : new GatewayError('shutting_down');
    ctx.end = (err?: unknown) => finish(found, ctx, res, err === undefined ? SUCCEEDED : err);
    // One reaction, where a catch, a finally and a catch were three promises and five closures
    // per request, and microtask turns more at its end. A stream hands the end to ctx.end: the
    // chain of promises from its relay up to here would live as long as the stream.
    const run = () => { start(found, refused, ctx, req, res).then((r) => { if (r !== HANDED_OFF) finish(found, ctx, res, SUCCEEDED); }, (err: unknown) => finish(found, ctx, res, err)); };
    if (turn) turn.run(run);
    else run();
  };
}
