// Validates a chat-completions body. Known fields get their types checked; any
// other field is kept in `raw` and passed through to OpenAI-compatible upstreams
// untouched (tools, response_format, ...), since the caller's SDK sent it on purpose.
import { z } from 'zod';
import type { ChatRequest } from '../domain.js';
import { bodyReader } from './request-schema.js';

const part = z.looseObject({ type: z.string(), text: z.string().optional() });
const message = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']),
  content: z.union([z.string(), z.array(part), z.null()], { error: 'must be a string, an array of content parts, or null' }).optional(),
});

// Every optional field may be null, as the OpenAI types allow (`stop?: string | null | …`):
// null asks for the default, as absence does, and goes upstream as sent where the upstream speaks OpenAI.
export const chatBody = z.looseObject({
  model: z.string().min(1),
  messages: z.array(message).min(1),
  stream: z.boolean().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  max_tokens: z.number().int().positive().nullish(),
  max_completion_tokens: z.number().int().positive().nullish(),
  stop: z.union([z.string(), z.array(z.string()).max(4)]).nullish(),
  presence_penalty: z.number().min(-2).max(2).nullish(),
  frequency_penalty: z.number().min(-2).max(2).nullish(),
  seed: z.number().int().nullish(),
  user: z.string().nullish(),
  // OpenAI's own bound; each choice is moderated, and the trace counts the tokens of all of them.
  n: z.number().int().min(1).max(128).nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
});

/** The schema, checked compiled (request-schema.ts). */
export const chatBodyReader = bodyReader(chatBody);

export function parseChatRequest(body: Record<string, unknown>): ChatRequest {
  const d = chatBodyReader.read(body);
  const req: ChatRequest = {
    model: d.model,
    messages: d.messages as ChatRequest['messages'],
    stream: d.stream === true,
    n: d.n ?? 1,
    raw: body,
    // Declared here, so that setting it later keeps the object's shape.
    rawText: undefined,
  };
  if (d.temperature != null) req.temperature = d.temperature;
  if (d.top_p != null) req.top_p = d.top_p;
  const maxTokens = d.max_completion_tokens ?? d.max_tokens;
  if (maxTokens != null) req.max_tokens = maxTokens;
  if (d.stop != null) req.stop = d.stop;
  if (d.presence_penalty != null) req.presence_penalty = d.presence_penalty;
  if (d.frequency_penalty != null) req.frequency_penalty = d.frequency_penalty;
  if (d.seed != null) req.seed = d.seed;
  if (d.user != null) req.user = d.user;
  return req;
}
