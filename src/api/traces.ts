// /v1/traces (spec 4.4) and the signed payload links they hand out. Only the
// caller's organisation is visible; any other id is 404. Each read mints a
// fresh link, HMAC-signed and short-lived, served by /v1/payloads/{id}.
import { GatewayError } from '../errors.js';
import type { GatewayRequest } from '../http/types.js';
import type { Handler } from '../pipeline/handle-request.js';
import { NO_STORE, sendEmpty, sendJson } from '../pipeline/reply.js';
import type { Services } from '../pipeline/services.js';
import { fetchPayload, getTrace, listTraces, signPayloadUrl, verifyPayloadSignature, type TraceReadOptions } from '../traces/index.js';
import { requireAdmin } from './management-auth.js';
import { boolParam } from './query-params.js';

/** A Host header that is a host: a name (`_` as container names have it, a trailing dot) or an IP literal, and a port. */
const HOST = /^(?:[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,252})?|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;

/**
 * Where the payload links point. Without `server.public_url` the request's own Host is
 * used, as the caller reached the gateway; one that is not a host (`evil.example/x?`)
 * would splice a path or a query into a credential-bearing link, so it falls back to the
 * gateway's own address. Which host a link names is only as trustworthy as the Host
 * header: behind a proxy that passes any, set `server.public_url`.
 */
function baseUrl(svc: Services, req: GatewayRequest): string {
  if (svc.config.server.public_url) return svc.config.server.public_url.replace(/\/+$/, '');
  const proto = req.headers['x-forwarded-proto'] === 'https' ? 'https' : 'http';
  const host = req.headers.host;
  return `${proto}://${host !== undefined && HOST.test(host) ? host : `127.0.0.1:${svc.config.server.port}`}`;
}

function readOptions(svc: Services, req: GatewayRequest): TraceReadOptions {
  const secret = svc.payloadSecret;
  if (!secret) return {};
  const base = baseUrl(svc, req);
  return { mintUrl: (id) => signPayloadUrl(base, id, secret, svc.config.traces.payload_url.ttl_seconds) };
}

export const listTracesHandler: Handler = async (svc, ctx, req, res) => {
  const org = await requireAdmin(svc, ctx, req);
  const q = new URLSearchParams(req.query);
  const page = await listTraces(svc.pool, org, {
    limit: q.get('limit') ?? undefined,
    startingAfter: q.get('starting_after') ?? undefined,
    status: q.get('status') ?? undefined,
    provider: q.get('provider') ?? undefined,
    model: q.get('model') ?? undefined,
    key: q.get('key') ?? undefined,
    streamed: boolParam(q, 'streamed'),
    aborted: boolParam(q, 'aborted'),
  }, readOptions(svc, req));
  ctx.trace.status_code = 200;
  sendJson(res, 200, JSON.stringify({ object: 'list', ...page }), ctx.requestId, NO_STORE);
};

async function findTrace(svc: Services, req: GatewayRequest, org: string, id: string) {
  const trace = await getTrace(svc.pool, org, id, readOptions(svc, req));
  if (!trace) throw new GatewayError('not_found', `No trace with request_id "${id}".`, { param: 'request_id' });
  return trace;
}

export const getTraceHandler: Handler = async (svc, ctx, req, res, [id]) => {
  const org = await requireAdmin(svc, ctx, req);
  const trace = await findTrace(svc, req, org, id!);
  ctx.trace.status_code = 200;
  sendJson(res, 200, JSON.stringify(trace), ctx.requestId, NO_STORE);
};

export const headTraceHandler: Handler = async (svc, ctx, req, res, [id]) => {
  const org = await requireAdmin(svc, ctx, req);
  const trace = await findTrace(svc, req, org, id!);
  const headers: Array<[string, string]> = [['x-gateway-trace-status', String(trace.status_code)]];
  // Absent, not empty, when no provider was chosen: GET reads null there, and "" could be a provider's name.
  if (trace.provider !== null) headers.push(['x-gateway-trace-provider', trace.provider]);
  if (trace.payload_url) headers.push(['x-gateway-trace-payload', trace.payload_url]);
  ctx.trace.status_code = 200;
  sendEmpty(res, 200, ctx.requestId, headers);
};

/** No bearer key: the signature is the credential, and it expires. */
export const payloadHandler: Handler = async (svc, ctx, req, res, [id]) => {
  const q = new URLSearchParams(req.query);
  const secret = svc.payloadSecret;
  if (!secret || verifyPayloadSignature(id!, q.get('expires'), q.get('sig'), secret) !== 'ok') throw new GatewayError('payload_link_invalid');
  const payload = await fetchPayload(svc.pool, id!);
  if (!payload) throw new GatewayError('not_found', `No payload for "${id}".`);
  ctx.trace.status_code = 200;
  sendJson(res, 200, JSON.stringify(payload), ctx.requestId, NO_STORE);
};
