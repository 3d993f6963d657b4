// Unauthenticated operational endpoints, for load balancers and Prometheus.
import type { Handler } from './handle-request.js';
import { NO_STORE, sendJson } from './reply.js';

export const healthz: Handler = async (_svc, ctx, _req, res) => {
  ctx.trace.status_code = 200;
  sendJson(res, 200, '{"status":"ok"}', ctx.requestId);
};

/** Readiness: 200 only when Postgres answers, migrations are applied and the policy workers are up; else 503 naming the failed check. */
export const readyz: Handler = async (svc, ctx, _req, res) => {
  const { ready, checks } = await svc.readiness.check();
  ctx.trace.status_code = ready ? 200 : 503;
  const body = ready ? '{"status":"ready"}' : JSON.stringify({ status: 'not_ready', checks });
  sendJson(res, ctx.trace.status_code, body, ctx.requestId, NO_STORE);
};

export const metricsEndpoint: Handler = async (svc, ctx, _req, res) => {
  const text = svc.metricsText ? await svc.metricsText() : await svc.metrics.registry.metrics();
  ctx.trace.status_code = 200;
  res.send(200, [['content-type', svc.metrics.registry.contentType], ['x-request-id', ctx.requestId]], text);
};
