import { GatewayError } from '../errors.js';
import type { GatewayRequest } from '../http/types.js';

/**
 * The body as a JSON object, with the text it was parsed from; malformed JSON
 * or a non-object is 400. The content type is not checked: `curl -d` labels
 * JSON as a form, and what matters is whether the bytes parse.
 */
export async function readJsonText(req: GatewayRequest): Promise<{ value: Record<string, unknown>; text: string }> {
  const text = (await req.body()).toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new GatewayError('invalid_json', `The body is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new GatewayError('invalid_request', 'The body must be a JSON object.');
  return { value: value as Record<string, unknown>, text };
}

export async function readJsonObject(req: GatewayRequest): Promise<Record<string, unknown>> {
  return (await readJsonText(req)).value;
}
