// /v1/routes: routing-rule management (spec 4.4). Every query is scoped to the
// caller's organisation, so another organisation's rule is a plain 404. After a
// write, this instance recompiles at once; the others pick the change up at
// their next poll.
import { GatewayError } from '../errors.js';
import type { Handler } from '../pipeline/handle-request.js';
import { readJsonObject } from '../pipeline/read-json.js';
import { NO_STORE, sendEmpty, sendJson } from '../pipeline/reply.js';
import type { RequestContext } from '../pipeline/request-context.js';
import type { GatewayResponse } from '../http/types.js';
import {
  createRoute, deleteRoute, DuplicateRouteName, getRoute, listRoutes, patchRoute, replaceRoute,
} from '../store/routes-repo.js';
import { requireAdmin } from './management-auth.js';
import { boolParam, limitParam } from './query-params.js';
import { applyPatch, parseDefinition } from './route-body.js';

const notFound = (id: string) => new GatewayError('not_found', `No route with id "${id}".`, { param: 'id' });

async function uniqueName<T>(write: () => Promise<T>, name: string): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (err instanceof DuplicateRouteName) throw new GatewayError('conflict', `A route named "${name}" already exists in this organisation.`, { param: 'name' });
    throw err;
  }
}

function reply(ctx: RequestContext, res: GatewayResponse, status: number, body: unknown): void {
  ctx.trace.status_code = status;
  sendJson(res, status, JSON.stringify(body), ctx.requestId, NO_STORE);
}

export const listRoutesHandler: Handler = async (svc, ctx, req, res) => {
  const org = await requireAdmin(svc, ctx, req);
  const q = new URLSearchParams(req.query);
  const enabled = boolParam(q, 'enabled');
  // A list, as the keys' and the traces' are (until 2026-11-29 this one alone had no `object`).
  reply(ctx, res, 200, { object: 'list', ...await listRoutes(svc.pool, org, { limit: limitParam(q), ...(enabled === undefined ? {} : { enabled }) }) });
};

export const createRouteHandler: Handler = async (svc, ctx, req, res) => {
  const org = await requireAdmin(svc, ctx, req);
  const def = parseDefinition(await readJsonObject(req));
  const route = await uniqueName(() => createRoute(svc.pool, org, def), def.name);
  await svc.management.rulesChanged();
  reply(ctx, res, 201, route);
};

export const getRouteHandler: Handler = async (svc, ctx, req, res, [id]) => {
  const org = await requireAdmin(svc, ctx, req);
  reply(ctx, res, 200, (await getRoute(svc.pool, org, id!)) ?? throwNotFound(id!));
};

export const replaceRouteHandler: Handler = async (svc, ctx, req, res, [id]) => {
  const org = await requireAdmin(svc, ctx, req);
  const def = parseDefinition(await readJsonObject(req));
  const route = await uniqueName(() => replaceRoute(svc.pool, org, id!, def), def.name);
  if (!route) throw notFound(id!);
  await svc.management.rulesChanged();
  reply(ctx, res, 200, route);
};

export const patchRouteHandler: Handler = async (svc, ctx, req, res, [id]) => {
  const org = await requireAdmin(svc, ctx, req);
  const body = await readJsonObject(req);
  // Only a supplied name can collide (the stored one is unique already), and a write that got that far had it validated.
  const route = await uniqueName(() => patchRoute(svc.pool, org, id!, (current) => applyPatch(current, body)), String(body.name));
  if (!route) throw notFound(id!);
  await svc.management.rulesChanged();
  reply(ctx, res, 200, route);
};

export const deleteRouteHandler: Handler = async (svc, ctx, req, res, [id]) => {
  const org = await requireAdmin(svc, ctx, req);
  if (!(await deleteRoute(svc.pool, org, id!))) throw notFound(id!);
  await svc.management.rulesChanged();
  ctx.trace.status_code = 204;
  sendEmpty(res, 204, ctx.requestId);
};

function throwNotFound(id: string): never {
  throw notFound(id);
}
