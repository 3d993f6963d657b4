// The only place errors become replies. Before the first byte a failure is a
// JSON error with its catalogue status; after it, the terminal SSE error event.
import { errorBody, sseErrorEvent, toGatewayError, type GatewayError } from '../errors.js';
import type { GatewayResponse, HeaderList } from '../http/types.js';

export const JSON_TYPE = 'application/json';

/**
 * For answers no cache may keep: what only an organisation may read (keys, routes,
 * traces, usage, stored answers; a trace's signed payload link is a credential), and readiness.
 */
export const NO_STORE: HeaderList = [['cache-control', 'no-store']];

const CONTENT_TYPE = ['content-type', JSON_TYPE] as const;
/** As OpenAI's answers carry it: an error echoes the caller's path, and no browser may read JSON as a page. */
const NOSNIFF = ['x-content-type-options', 'nosniff'] as const;

export function sendJson(res: GatewayResponse, status: number, body: string | Buffer, requestId: string, extra: HeaderList = []): void {
  res.send(status, [CONTENT_TYPE, NOSNIFF, ['x-request-id', requestId], ...extra], body);
}

export function sendEmpty(res: GatewayResponse, status: number, requestId: string, extra: HeaderList = []): void {
  res.send(status, [['x-request-id', requestId], ...extra]);
}

/** Replies with the error, as JSON or as the terminal SSE event; returns the normalised error for the trace. */
export function sendError(res: GatewayResponse, err: unknown, requestId: string): GatewayError {
  const e = toGatewayError(err);
  if (res.aborted) return e;
  if (res.started) {
    res.endStream(sseErrorEvent(e.code, e.message, requestId));
  } else {
    const extra: HeaderList = e.status === 401 ? [['www-authenticate', 'Bearer'], ...e.headers] : e.headers;
    sendJson(res, e.status, errorBody(e, requestId), requestId, extra);
  }
  return e;
}
