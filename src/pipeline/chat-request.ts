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

export const chatBody = z.looseObject({
  model: z.string().min(1),
  messages: z.array(message).min(1),
  stream: z.boolean().optional(),
  temperature: z.number().min(0).max(2).optional(),
  top_p: z.number().min(0).max(1).optional(),
  max_tokens: z.number().int().positive().optional(),
  max_completion_tokens: z.number().int().positive().optional(),
  stop: z.union([z.string(), z.array(z.string()).max(4)]).optional(),
  presence_penalty: z.number().min(-2).max(2).optional(),
  frequency_penalty: z.number().min(-2).max(2).optional(),
  seed: z.number().int().optional(),
  user: z.string().optional(),
  // OpenAI's own bound; each choice is moderated, and the trace counts the tokens of all of them.
  n: z.number().int().min(1).max(128).optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).optional(),
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
  if (d.temperature !== undefined) req.temperature = d.temperature;
  if (d.top_p !== undefined) req.top_p = d.top_p;
  const maxTokens = d.max_completion_tokens ?? d.max_tokens;
  if (maxTokens !== undefined) req.max_tokens = maxTokens;
  if (d.stop !== undefined) req.stop = d.stop;
  if (d.presence_penalty !== undefined) req.presence_penalty = d.presence_penalty;
  if (d.frequency_penalty !== undefined) req.frequency_penalty = d.frequency_penalty;
  if (d.seed !== undefined) req.seed = d.seed;
  if (d.user !== undefined) req.user = d.user;
  return req;
}
