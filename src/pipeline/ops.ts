// Unauthenticated operational endpoints, for load balancers and Prometheus.
import type { Handler } from './handle-request.js';
import { sendJson } from './reply.js';

export const healthz: Handler = async (_svc, ctx, _req, res) => {
  ctx.trace.status_code = 200;
  sendJson(res, 200, '{"status":"ok"}', ctx.requestId);
};

export const metricsEndpoint: Handler = async (svc, ctx, _req, res) => {
  const text = await svc.metrics.registry.metrics();
  ctx.trace.status_code = 200;
  res.send(200, [['content-type', svc.metrics.registry.contentType], ['x-request-id', ctx.requestId]], text);
};
