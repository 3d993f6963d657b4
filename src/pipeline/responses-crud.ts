// GET and DELETE /v1/responses/{id}: the caller's organisation's stored
// responses only; any other id, deleted or expired, is 404 not_found. Any key
// of the organisation may call them, as it may create responses.
import { GatewayError } from '../errors.js';
import { inputItemsPage, readPageQuery } from '../responses/input-items-page.js';
import type { Handler } from './handle-request.js';
import { NO_STORE, sendJson } from './reply.js';
import { deleteHeldCopy } from './responses-held-copy.js';
import { authenticate } from './services.js';

const notFound = (id: string) => new GatewayError('not_found', `No response with id "${id}".`, { param: 'response_id' });

export const getResponse: Handler = async (svc, ctx, req, res, [id]) => {
  await authenticate(svc, ctx, req);
  if (new URLSearchParams(req.query).get('stream') === 'true') {
    throw new GatewayError('invalid_request', 'Replaying a stored response as a stream is not supported.', { param: 'stream' });
  }
  const row = await svc.responses.get(ctx.key!.organization_id, id!);
  if (!row) throw notFound(id!);
  ctx.trace.status_code = 200;
  sendJson(res, 200, JSON.stringify(row.response), ctx.requestId, NO_STORE);
};

/** A page of the stored input items, as OpenAI lists them (input-items-page.ts). */
export const getResponseInputItems: Handler = async (svc, ctx, req, res, [id]) => {
  await authenticate(svc, ctx, req);
  const query = readPageQuery(req.query);
  const row = await svc.responses.get(ctx.key!.organization_id, id!);
  if (!row) throw notFound(id!);
  const page = inputItemsPage(row.id, row.input, query);
  ctx.trace.status_code = 200;
  sendJson(res, 200, JSON.stringify(page), ctx.requestId, NO_STORE);
};

/**
 * A native response is deleted upstream first (responses-held-copy.ts): the
 * row is kept, and the caller gets the error, until the provider no longer
 * holds it. A translated response is sluice's alone.
 */
export const deleteResponse: Handler = async (svc, ctx, req, res, [id]) => {
  await authenticate(svc, ctx, req);
  const org = ctx.key!.organization_id;
  const row = await svc.responses.get(org, id!);
  if (!row) throw notFound(id!);
  if (row.native) await deleteHeldCopy(svc, ctx, res, row);
  // A row gone meanwhile (a concurrent delete, its expiry) is as deleted as this one would be.
  await svc.responses.delete(org, row.id);
  ctx.trace.status_code = 200;
  sendJson(res, 200, JSON.stringify({ id: row.id, object: 'response', deleted: true }), ctx.requestId, NO_STORE);
};
