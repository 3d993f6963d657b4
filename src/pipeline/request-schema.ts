// A request body's schema: one zod definition, checked by Ajv's compilation
// of it, and worded by zod where a body is refused.
//
// zod's parse is generic code shared by every schema in the process, and it
// copies every object it passes: under callgrind it cost 5.9k instructions of
// a one-message chat request and 26k of a twenty-message one, against 0.6k
// and 2.3k for the compiled check (a loop over one schema hides that: its
// lookups see one schema, the server's see all of them). The zod schema stays
// the one definition: a body the check passes is read as sent, and zod parses
// only a body the check refuses, so a 400 is worded by zod as before. Each
// schema's test holds the two to the same verdict (test/request-checks.test.ts).
import { Ajv } from 'ajv';
import { z } from 'zod';
import { GatewayError } from '../errors.js';

/**
 * Ajv compiles a schema into a function from generated source. A process
 * started with --disallow-code-generation-from-strings refuses that (it would
 * not start); there every body is read by zod alone, as before the check.
 */
function codeGenerationAllowed(): boolean {
  try {
    return typeof new Function('return 1') === 'function';
  } catch {
    return false;
  }
}

const ajv = codeGenerationAllowed() ? new Ajv() : undefined;

/** Turns the first schema issue into a 400 that names the field. */
export function invalidFromZod(error: z.ZodError): GatewayError {
  const issue = error.issues[0]!;
  const param = issue.path.join('.');
  return new GatewayError('invalid_request', `${param || 'body'}: ${issue.message}`, { param });
}

export interface BodyReader<T> {
  /** Whether a body passes the schema, by its compiled JSON Schema. */
  check(body: unknown): boolean;
  /** The body as the schema reads it: as sent where the check passes it, else zod's parse, or zod's first issue as a 400. */
  read(body: unknown): T;
}

export function bodyReader<S extends z.ZodType>(schema: S): BodyReader<z.infer<S>> {
  const compiled = ajv?.compile(z.toJSONSchema(schema, { target: 'draft-7', io: 'input' }));
  return {
    check: compiled ?? ((body) => schema.safeParse(body).success),
    read(body) {
      if (compiled?.(body)) return body as z.infer<S>;
      const r = schema.safeParse(body);
      if (!r.success) throw invalidFromZod(r.error);
      return r.data;
    },
  };
}
