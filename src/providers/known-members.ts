// The translating adapters read an object of the caller's member by member, so
// a member they do not read would be lost without a word. This refuses it
// instead, by name: a field that cannot be honoured is a 400, never a drop.
import { GatewayError } from '../errors.js';

/**
 * Members the openai SDK's helpers put on the messages they hand back
 * (`stream()`, `runTools()`, `.parse()`), which a tool loop then sends as the
 * next request's history: its own parse of the content and of a call's
 * arguments, which are sent. Dropping them changes nothing the model reads.
 */
export const SDK_PARSED_MESSAGE = 'parsed';
export const SDK_PARSED_ARGUMENTS = 'parsed_arguments';

/**
 * The first member of `obj` outside `known`, or undefined. A null member reads
 * as absent, as an SDK writes `refusal: null` or `audio: null` for what an
 * answer did not have.
 */
export function unknownMember(obj: Readonly<Record<string, unknown>>, known: ReadonlySet<string>): string | undefined {
  for (const key of Object.keys(obj)) if (!known.has(key) && obj[key] != null) return key;
  return undefined;
}

/** Throws invalid_request naming `${at}.${key}` for the first member unknownMember finds. */
export function refuseUnknownMembers(obj: Readonly<Record<string, unknown>>, known: ReadonlySet<string>, at: string, provider: string): void {
  const key = unknownMember(obj, known);
  if (key !== undefined) throw new GatewayError('invalid_request', `${at}.${key} is not supported for ${provider} models.`, { param: `${at}.${key}` });
}

/** `response_format`'s members, and its `json_schema`'s: `strict` is accepted (docs/compatibility.md). */
const FORMAT_KEYS = new Set(['type', 'json_schema']);
const JSON_SCHEMA_KEYS = new Set(['name', 'description', 'schema', 'strict']);

/** Refuses a member of `response_format` or its `json_schema` that no translation reads. */
export function checkResponseFormat(format: Readonly<Record<string, unknown>>, provider: string): void {
  refuseUnknownMembers(format, FORMAT_KEYS, 'response_format', provider);
  const schema = format.json_schema;
  if (typeof schema === 'object' && schema !== null) refuseUnknownMembers(schema as Record<string, unknown>, JSON_SCHEMA_KEYS, 'response_format.json_schema', provider);
}

/** A named `tool_choice`'s members: `{type: "function", function: {name}}`. */
const NAMED_CHOICE_KEYS = new Set(['type', 'function']);
const NAMED_CHOICE_FUNCTION_KEYS = new Set(['name']);

export function checkNamedToolChoice(choice: Readonly<Record<string, unknown>>, provider: string): void {
  refuseUnknownMembers(choice, NAMED_CHOICE_KEYS, 'tool_choice', provider);
  const fn = choice.function;
  if (typeof fn === 'object' && fn !== null) refuseUnknownMembers(fn as Record<string, unknown>, NAMED_CHOICE_FUNCTION_KEYS, 'tool_choice.function', provider);
}
