// Query-string parsing shared by the management list endpoints. Bad values are
// a 400 naming the parameter, never silently clamped.
import { GatewayError } from '../errors.js';

export const LIMIT_DEFAULT = 50;
export const LIMIT_MAX = 200;

export function boolParam(q: URLSearchParams, name: string): boolean | undefined {
  const v = q.get(name);
  if (v === null) return undefined;
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw new GatewayError('invalid_request', `${name} must be true or false.`, { param: name });
}

export function limitParam(q: URLSearchParams): number {
  const v = q.get('limit');
  if (v === null) return LIMIT_DEFAULT;
  const n = /^\d{1,4}$/.test(v) ? Number(v) : NaN;
  if (!(n >= 1 && n <= LIMIT_MAX)) throw new GatewayError('invalid_request', `limit must be an integer from 1 to ${LIMIT_MAX}.`, { param: 'limit' });
  return n;
}
