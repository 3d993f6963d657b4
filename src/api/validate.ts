// Zod parsing for management bodies: the first problem becomes a 400 that names
// the field, with the path made absolute (`action.model`) and unknown fields
// named themselves rather than their parent.
import type { z } from 'zod';
import { GatewayError } from '../errors.js';

function invalid(error: z.ZodError, prefix: string[] = []): GatewayError {
  // An unknown key is usually a misspelling of a missing one, so it names the fault best.
  const issue = error.issues.find((i) => i.code === 'unrecognized_keys') ?? error.issues[0]!;
  const path = [...prefix, ...issue.path.map(String)];
  if (issue.code === 'unrecognized_keys') {
    const param = [...path, issue.keys[0]!].join('.');
    return new GatewayError('invalid_request', `${param}: unknown field.`, { param });
  }
  const param = path.join('.');
  return new GatewayError('invalid_request', `${param || 'body'}: ${issue.message}`, { param });
}

export function parse<S extends z.ZodType>(schema: S, value: unknown, prefix: string[] = []): z.output<S> {
  const r = schema.safeParse(value);
  if (!r.success) throw invalid(r.error, prefix);
  return r.data;
}

