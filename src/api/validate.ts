// Zod parsing for management bodies: the first problem becomes a 400 that names
// the field, with the path made absolute (`action.model`) and unknown fields
// named themselves rather than their parent.
import { z } from 'zod';
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


// A UTF-16 surrogate without its pair: JSON.parse accepts "\ud800", but it is no
// character, so it has no UTF-8 form. Postgres refuses its escape in jsonb (a 500
// found by the fuzz suite) and text would silently store U+FFFD instead.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** A stored string: Postgres refuses NUL and lone surrogates, so they are refused here as the caller's 400, naming the field. */
export function storedText(max: number) {
  return z.string().min(1).max(max)
    .refine((s) => !s.includes('\0'), 'must not contain NUL characters')
    .refine((s) => !LONE_SURROGATE.test(s), 'must be valid Unicode (it holds an unpaired surrogate)');
}
