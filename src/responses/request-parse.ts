// Validates a `POST /v1/responses` body. Known fields get their types checked;
// every other field stays in `raw`: the native path passes it through, and the
// translated path decides field by field (request-to-chat.ts).
import { z } from 'zod';
import { GatewayError } from '../errors.js';
import { bodyReader } from '../pipeline/request-schema.js';
import { type Item, type ResponsesRequest } from './types.js';

export const responsesBody = z.looseObject({
  model: z.string().min(1),
  input: z.union([z.string(), z.array(z.looseObject({}))], { error: 'must be a string or an array of input items' }),
  instructions: z.string().nullish(),
  stream: z.boolean().nullish(),
  store: z.boolean().nullish(),
  previous_response_id: z.string().min(1).nullish(),
  max_output_tokens: z.number().int().positive().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  tools: z.array(z.looseObject({ type: z.string() })).nullish(),
  tool_choice: z.union([z.enum(['auto', 'none', 'required']), z.looseObject({ type: z.string() })]).nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  text: z.looseObject({ format: z.looseObject({ type: z.string() }).nullish() }).nullish(),
  reasoning: z.looseObject({ effort: z.string().nullish() }).nullish(),
  metadata: z.record(z.string(), z.string()).nullish(),
  user: z.string().nullish(),
});

/** The schema, checked compiled (pipeline/request-schema.ts). */
export const responsesBodyReader = bodyReader(responsesBody);

/** An item without `type` but with a role is a message (OpenAI's "easy input message"). */
function normaliseItem(item: Item, i: number): Item {
  if (typeof item.type === 'string') return item;
  if (typeof item.role === 'string') return { type: 'message', ...item };
  throw new GatewayError('invalid_request', `input.${i}: an item needs a type (or a role, for a message).`, { param: `input.${i}.type` });
}

export function parseResponsesRequest(raw: Record<string, unknown>, text?: string): ResponsesRequest {
  const d = responsesBodyReader.read(raw);
  const inputWasString = typeof d.input === 'string';
  const input: Item[] = typeof d.input === 'string'
    ? [{ type: 'message', role: 'user', content: d.input }]
    : d.input.map((it, i) => normaliseItem(it as Item, i));
  return {
    model: d.model,
    input,
    inputWasString,
    instructions: d.instructions ?? undefined,
    stream: d.stream === true,
    store: d.store !== false,
    previous_response_id: d.previous_response_id ?? undefined,
    max_output_tokens: d.max_output_tokens ?? undefined,
    raw,
    text,
  };
}
