// /v1/api-keys (Preview, spec 4.4). The secret is returned once, by create;
// listings never include it. New keys default to role `user` (model endpoints
// only); an admin may mint another admin key by asking for role `admin`.
import { z } from 'zod';
import { GatewayError } from '../errors.js';
import type { Handler } from '../pipeline/handle-request.js';
import { readJsonObject } from '../pipeline/read-json.js';
import { NO_STORE, sendEmpty, sendJson } from '../pipeline/reply.js';
import { createKey, listKeys, revokeKey } from '../store/api-keys-repo.js';
import { requireAdmin } from './management-auth.js';
import { parse, storedText } from './validate.js';
import { createKeyLimits, limitsBody, withLimits } from './api-key-limits.js';
import { getKeyLimits } from '../store/limits-repo.js';

const createBody = z.strictObject({
  name: storedText(200),
  role: z.enum(['admin', 'user']).default('user'),
  limits: limitsBody.optional(),
});

export const listKeysHandler: Handler = async (svc, ctx, req, res) => {
  const org = await requireAdmin(svc, ctx, req);
  ctx.trace.status_code = 200;
  const keys = await listKeys(svc.pool, org);
  const limits = await getKeyLimits(svc.pool, keys.map((k) => k.id));
  sendJson(res, 200, JSON.stringify({ object: 'list', data: keys.map((k) => withLimits(k, limits.get(k.id))) }), ctx.requestId, NO_STORE);
};

export const createKeyHandler: Handler = async (svc, ctx, req, res) => {
  const org = await requireAdmin(svc, ctx, req);
  const body = parse(createBody, await readJsonObject(req));
  const key = await createKey(svc.pool, org, body.name, body.role);
  const limits = await createKeyLimits(svc, key.id, org, body.limits);
  ctx.trace.status_code = 201;
  sendJson(res, 201, JSON.stringify({ object: 'api_key', ...key, ...(limits ? { limits } : {}) }), ctx.requestId, NO_STORE);
};

export const revokeKeyHandler: Handler = async (svc, ctx, req, res, [id]) => {
  const org = await requireAdmin(svc, ctx, req);
  const hash = await revokeKey(svc.pool, id!, org);
  if (!hash) throw new GatewayError('not_found', `No API key with id "${id}".`, { param: 'id' });
  await svc.management.keyRevoked(hash);
  ctx.trace.status_code = 204;
  sendEmpty(res, 204, ctx.requestId);
};
