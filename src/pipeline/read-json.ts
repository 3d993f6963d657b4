import { GatewayError } from '../errors.js';
import type { GatewayRequest } from '../http/types.js';

/** The body as a JSON object; a wrong media type is 415, malformed JSON or a non-object is 400. */
export async function readJsonObject(req: GatewayRequest): Promise<Record<string, unknown>> {
  const type = req.headers['content-type'];
  if (type !== undefined && !type.toLowerCase().includes('json')) throw new GatewayError('unsupported_media_type');
  const buf = await req.body();
  let value: unknown;
  try {
    value = JSON.parse(buf.toString('utf8'));
  } catch (err) {
    throw new GatewayError('invalid_json', `The body is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new GatewayError('invalid_request', 'The body must be a JSON object.');
  return value as Record<string, unknown>;
}
