// A Responses request -> a chat request, for providers without a Responses
// API (the chat adapters then carry it to OpenAI-compatible, Anthropic and
// Gemini upstreams). Every field is mapped, listed as harmless, or refused
// with a 400 naming it: nothing is dropped quietly.
import type { ChatMessage, ChatRequest } from '../domain.js';
import { GatewayError } from '../errors.js';
import { unknownMember } from '../providers/known-members.js';
import { messageOrigin } from './items-to-messages.js';
import { isObj, type Json, type ResponsesRequest } from './types.js';

/**
 * Fields the translated path accepts without sending them upstream, because
 * losing them cannot change the answer: the gateway itself handles them
 * (store, previous_response_id, stream, metadata), they are hints (prompt
 * caching, safety identifiers, service tier) or they ask for the default.
 */
export const HARMLESS_FIELDS: ReadonlySet<string> = new Set([
  'model', 'input', 'instructions', 'stream', 'store', 'previous_response_id', 'metadata',
  'prompt_cache_key', 'prompt_cache_retention', 'safety_identifier', 'service_tier', 'stream_options',
]);

/**
 * Values that ask for what the translated path does anyway. A map, not an
 * object: a caller's "constructor" or "__proto__" would find Object.prototype's.
 */
const DEFAULT_VALUES: ReadonlyMap<string, (v: unknown) => boolean> = new Map([
  ['truncation', (v: unknown) => v === 'disabled'],
  ['background', (v: unknown) => v === false],
  // Nothing encrypted is ever produced, so asking for it is harmless.
  ['include', (v: unknown) => Array.isArray(v) && v.every((x) => x === 'reasoning.encrypted_content')],
  ['top_logprobs', (v: unknown) => v === 0],
]);

const MAPPED = new Set(['temperature', 'top_p', 'max_output_tokens', 'tools', 'tool_choice', 'parallel_tool_calls', 'text', 'reasoning', 'user']);

const refuse = (param: string, why: string): never => {
  throw new GatewayError('invalid_request', `${why} This model's provider has no native Responses API, so it cannot be honoured.`, { param });
};

/** Refuses the first member of `o` outside `known`, one the chat request has no place for (null counts as absent). */
export function onlyKnown(o: Json, known: ReadonlySet<string>, at: string): void {
  const k = unknownMember(o, known);
  if (k !== undefined) refuse(`${at}.${k}`, `${at}.${k} has no chat equivalent.`);
}

const TOOL_MEMBERS = new Set(['type', 'name', 'description', 'parameters', 'strict']);
const FORMAT_ONLY = new Set(['format']);
const REASONING_MEMBERS = new Set(['effort', 'summary', 'generate_summary']);
const SCHEMA_FORMAT_MEMBERS = new Set(['type', 'name', 'schema', 'description', 'strict']);

function tools(list: unknown[]): Json[] {
  return list.map((t, i) => {
    if (!isObj(t) || t.type !== 'function') return refuse(`tools.${i}.type`, `Tool type "${isObj(t) ? String(t.type) : typeof t}" is a hosted tool.`);
    onlyKnown(t, TOOL_MEMBERS, `tools.${i}`);
    const fn: Json = { name: t.name };
    if (t.description != null) fn.description = t.description;
    if (t.parameters != null) fn.parameters = t.parameters;
    if (t.strict != null) fn.strict = t.strict;
    return { type: 'function', function: fn };
  });
}

function toolChoice(v: unknown): unknown {
  if (typeof v === 'string') return v;
  if (isObj(v) && v.type === 'function' && typeof v.name === 'string') return { type: 'function', function: { name: v.name } };
  return refuse('tool_choice', `tool_choice ${JSON.stringify(v)} names a hosted tool.`);
}

function responseFormat(text: Json): Json | undefined {
  onlyKnown(text, FORMAT_ONLY, 'text');
  const f = text.format;
  if (!isObj(f) || f.type === 'text') return undefined;
  if (f.type === 'json_object') return { type: 'json_object' };
  if (f.type === 'json_schema') {
    onlyKnown(f, SCHEMA_FORMAT_MEMBERS, 'text.format');
    const schema: Json = { name: f.name, schema: f.schema };
    if (f.description != null) schema.description = f.description;
    if (f.strict != null) schema.strict = f.strict;
    return { type: 'json_schema', json_schema: schema };
  }
  return refuse('text.format.type', `text.format "${String(f.type)}" is unknown.`);
}

function reasoningEffort(r: Json): unknown {
  onlyKnown(r, REASONING_MEMBERS, 'reasoning');
  return r.effort ?? undefined;
}

/** The chat request for `req`, over `messages` (the stored conversation, then this request's input). */
export function toChatRequest(req: ResponsesRequest, messages: ChatMessage[]): ChatRequest {
  const raw = req.raw;
  for (const k of Object.keys(raw)) {
    const v = raw[k];
    if (v == null || HARMLESS_FIELDS.has(k) || MAPPED.has(k)) continue;
    if (DEFAULT_VALUES.get(k)?.(v)) continue;
    refuse(k, `The field "${k}" has no chat equivalent.`);
  }
  const body: Json = { model: req.model, messages };
  const chat: ChatRequest = { model: req.model, messages, stream: req.stream, n: 1, raw: body };
  if (typeof raw.temperature === 'number') body.temperature = chat.temperature = raw.temperature;
  if (typeof raw.top_p === 'number') body.top_p = chat.top_p = raw.top_p;
  if (req.max_output_tokens !== undefined) body.max_tokens = chat.max_tokens = req.max_output_tokens;
  if (typeof raw.user === 'string') body.user = chat.user = raw.user;
  if (Array.isArray(raw.tools) && raw.tools.length) body.tools = tools(raw.tools);
  if (raw.tool_choice != null) body.tool_choice = toolChoice(raw.tool_choice);
  if (typeof raw.parallel_tool_calls === 'boolean' && body.tools) body.parallel_tool_calls = raw.parallel_tool_calls;
  if (isObj(raw.text)) {
    const rf = responseFormat(raw.text);
    if (rf) body.response_format = rf;
  }
  if (isObj(raw.reasoning)) {
    const effort = reasoningEffort(raw.reasoning);
    if (effort !== undefined) body.reasoning_effort = effort;
  }
  if (req.stream) body.stream = true;
  return chat;
}

/** Chat fields toChatRequest made from a Responses field of another name, longest first. */
const RENAMED: ReadonlyArray<readonly [RegExp, string]> = [
  [/^max_tokens$/, 'max_output_tokens'],
  [/^reasoning_effort$/, 'reasoning.effort'],
  [/^response_format(?:\.json_schema)?(?=\.|$)/, 'text.format'],
  [/^tools\.(\d+)\.function(?=\.|$)/, 'tools.$1'],
  [/^tool_choice\.function(?=\.|$)/, 'tool_choice'],
];

/**
 * The Responses name of a chat request's `param`, as the caller wrote it: a
 * message is named by the input item it was made from (or `instructions`, or
 * `previous_response_id` for a stored turn), and a field by its own name.
 */
export function responsesParam(param: string, chat: ChatRequest): string {
  const msg = /^messages\.(\d+)(?=\.|$)/.exec(param);
  if (msg) {
    const m = chat.messages[Number(msg[1])];
    return (m && messageOrigin.get(m)) ?? (m?.role === 'system' && Number(msg[1]) === 0 ? 'instructions' : 'input');
  }
  for (const [from, to] of RENAMED) if (from.test(param)) return param.replace(from, to);
  return param;
}

/** `err` with its param in the caller's terms; only the gateway's own 400s name a chat field (a provider's name its own). */
export function inResponsesTerms(err: unknown, chat: ChatRequest): unknown {
  if (!(err instanceof GatewayError) || err.code !== 'invalid_request' || err.param === null || err.upstream) return err;
  const param = responsesParam(err.param, chat);
  if (param === err.param) return err;
  const message = err.message.includes(err.param) ? err.message.split(err.param).join(param) : `${param}: ${err.message}`;
  return new GatewayError('invalid_request', message, { param, cause: err, headers: err.headers });
}
