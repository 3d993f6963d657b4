// Gemini error bodies: `{error: {code, message, status, details}}`, or that
// object wrapped in an array (the JSON-array form of streamGenerateContent).
import type { PassHeaders, UpstreamErrorDetails } from '../../domain.js';
import { isObj } from '../json-shape.js';

/** google.rpc status -> the OpenAI error `type` a caller's code tests for. */
const TYPES: Record<string, string> = {
  INVALID_ARGUMENT: 'invalid_request_error',
  FAILED_PRECONDITION: 'invalid_request_error',
  OUT_OF_RANGE: 'invalid_request_error',
  NOT_FOUND: 'invalid_request_error',
  ALREADY_EXISTS: 'invalid_request_error',
  UNAUTHENTICATED: 'authentication_error',
  PERMISSION_DENIED: 'permission_error',
  RESOURCE_EXHAUSTED: 'rate_limit_error',
  INTERNAL: 'server_error',
  UNAVAILABLE: 'server_error',
  DEADLINE_EXCEEDED: 'server_error',
  UNKNOWN: 'server_error',
  CANCELLED: 'server_error',
};

function errorObject(body: string): Record<string, any> | undefined {
  try {
    let parsed = JSON.parse(body);
    if (Array.isArray(parsed)) parsed = parsed[0];
    return isObj(parsed) && isObj(parsed.error) ? parsed.error : undefined;
  } catch { return undefined; }
}

/** The message, and the google.rpc status as `code` with its OpenAI `type`. Anything else is shown truncated. */
export function errorDetails(status: number, body: string): UpstreamErrorDetails {
  const e = errorObject(body);
  const message = typeof e?.message === 'string' && e.message ? e.message : undefined;
  if (!e || !message) return { message: body ? body.slice(0, 300) : `Upstream answered HTTP ${status}.` };
  const code = typeof e.status === 'string' && e.status ? e.status : null;
  const details: UpstreamErrorDetails = { message, param: null, code };
  const type = code ? TYPES[code] : undefined;
  if (type) details.type = type;
  return details;
}

/**
 * Gemini answers a wrong API key with 400 INVALID_ARGUMENT (reason
 * API_KEY_INVALID), not 401: without this the caller would be told that their
 * own request was bad.
 */
export function credentialRejected(status: number, body: string): boolean {
  return status === 400 && (body.includes('API_KEY_INVALID') || body.includes('API key not valid'));
}

/** "30s", "1.5s" (a protobuf Duration in JSON) -> milliseconds. */
function durationMs(v: unknown): number | undefined {
  if (typeof v !== 'string') return undefined;
  const m = /^(\d+(?:\.\d+)?)s$/.exec(v.trim());
  return m ? Math.round(Number(m[1]) * 1000) : undefined;
}

/**
 * Gemini sends no rate-limit headers: a 429 says when to retry in the body, as
 * a google.rpc.RetryInfo detail. It becomes retry-after (whole seconds,
 * rounded up) and retry-after-ms, which the openai SDK reads first.
 */
export function errorHeaders(_status: number, body: string): PassHeaders {
  const details = errorObject(body)?.details;
  if (!Array.isArray(details)) return [];
  for (const d of details) {
    if (!isObj(d) || typeof d['@type'] !== 'string' || !d['@type'].endsWith('google.rpc.RetryInfo')) continue;
    const ms = durationMs(d.retryDelay);
    if (ms !== undefined) return [['retry-after', String(Math.ceil(ms / 1000))], ['retry-after-ms', String(ms)]];
  }
  return [];
}
