// GET /v1/usage: time-bucketed usage of the caller's organisation, with
// breakdowns by model, provider and key. Admin keys only, like every
// management read; the organisation comes from the key, never from a parameter.
import type { Handler } from '../pipeline/handle-request.js';
import { NO_STORE, sendJson } from '../pipeline/reply.js';
import { parseUsageQuery, queryUsage } from '../usage/index.js';
import { requireAdmin } from './management-auth.js';

export const usageHandler: Handler = async (svc, ctx, req, res) => {
  const org = await requireAdmin(svc, ctx, req);
  const report = await queryUsage(svc.pool, org, parseUsageQuery(req.query));
  ctx.trace.status_code = 200;
  sendJson(res, 200, JSON.stringify(report), ctx.requestId, NO_STORE);
};
