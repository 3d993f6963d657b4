// Every text of a chat request that the upstream will read and that can carry
// a caller's data: message content (strings, text parts and an assistant's
// refusal parts), `name`, an assistant's `refusal`, `reasoning_content` and
// `thinking_blocks` (all go back upstream in a multi-turn conversation; a
// redacted thinking block no longer matches its signature, and Anthropic
// refuses it, which is the point), the tool calls an assistant turn made
// (their arguments, and every member but their ids and names), tool results
// (`tool` messages, whose content is read as JSON where it is, since a
// translator may decode it), and every string in a member sluice does not know:
// an OpenAI-compatible upstream is sent the caller's members as they are, so
// a message's unknown member, `prediction`, `metadata`, `user` or a field
// nobody has invented yet would otherwise carry text past the policy. Only
// members known to hold no caller text are left out (chat-request fields such
// as `model` and `temperature`; tools and response formats, which the
// application writes). One walker serves both directions, so collecting and
// replacing can never disagree on the order. Collecting also says whose turn
// each message is, for the texts the model reads as one (reading-units.ts).
import type { ChatMessage, ContentPart, ToolCall } from '../domain.js';
import { ReadingUnits, type CollectedTexts, type Turn } from '../policy/reading-units.js';
import { mapArguments, mapOtherMembers, mapResultParts, mapTextParts, mapUserLocation, type MapText } from '../policy/text-walk.js';
import { isObj } from '../responses/types.js';

/** Which key of a content part holds its text: `text` for text parts, `refusal` for an assistant's refusal parts. */
const chatPartKey = (p: Record<string, unknown>): string | undefined => (p.type === 'text' ? 'text' : p.type === 'refusal' ? 'refusal' : undefined);

/** A call's members that name or number it (the tool's name must match its definition, the id its result), and its arguments, read apart. */
const CALL_READ: ReadonlySet<string> = new Set(['id', 'type', 'index', 'function']);
const FUNCTION_READ: ReadonlySet<string> = new Set(['name', 'arguments']);
/** An earlier audio answer's reference: its id is all the upstream needs. */
const AUDIO_READ: ReadonlySet<string> = new Set(['id']);

/** A call's arguments as JSON text, and every other member but its names and ids (a vendor's `extra_content`, say). */
function mapFunction<T extends Record<string, unknown>>(fn: T, f: MapText): T {
  let out = fn;
  if (typeof fn.arguments === 'string') {
    const t = mapArguments(fn.arguments, f);
    if (t !== fn.arguments) out = { ...fn, arguments: t };
  }
  return mapOtherMembers(out, FUNCTION_READ, f);
}

function mapToolCalls(calls: ToolCall[], f: MapText): ToolCall[] {
  let out: ToolCall[] | undefined;
  for (let i = 0; i < calls.length; i++) {
    const c = calls[i];
    if (!isObj(c)) continue;
    const fn = isObj(c.function) ? mapFunction(c.function, f) : c.function;
    const call = mapOtherMembers(fn === c.function ? c : { ...c, function: fn }, CALL_READ, f);
    if (call !== c) (out ??= calls.slice())[i] = call;
  }
  return out ?? calls;
}

/** Plain string fields of a message that reach the upstream besides its content. */
const STRING_FIELDS = ['name', 'refusal', 'reasoning_content'] as const;

/** A message's members read above, or holding no caller text (the role, the id of the call a tool result answers). */
const MESSAGE_READ: ReadonlySet<string> = new Set(['role', 'content', ...STRING_FIELDS, 'tool_calls', 'function_call', 'tool_call_id', 'audio']);

/**
 * The chat request's members that hold no caller text: settings, and what
 * the application writes (tools, schemas, stop sequences). Every other
 * member, known or not, is walked for strings.
 */
const REQUEST_SETTINGS: ReadonlySet<string> = new Set([
  'model', 'messages', 'stream', 'stream_options', 'n', 'temperature', 'top_p', 'max_tokens', 'max_completion_tokens',
  'stop', 'presence_penalty', 'frequency_penalty', 'logit_bias', 'logprobs', 'top_logprobs', 'seed', 'tools', 'tool_choice',
  'parallel_tool_calls', 'response_format', 'functions', 'function_call', 'reasoning_effort', 'service_tier', 'store',
  'modalities', 'audio', 'verbosity', 'web_search_options',
]);

function mapMessage(m: ChatMessage, f: MapText): ChatMessage {
  let out: ChatMessage | undefined;
  if (typeof m.content === 'string') {
    // A tool's result is often JSON, which a translator may decode (Gemini sends it as an object):
    // read value by value, escapes decoded, as call arguments are, or an escaped address would pass.
    const t = isResult(m) ? mapArguments(m.content, f) : f(m.content, true);
    if (t !== m.content) out = { ...m, content: t };
  } else if (Array.isArray(m.content)) {
    const parts = (isResult(m) ? mapResultParts : mapTextParts)(m.content, chatPartKey, f, true) as ContentPart[];
    if (parts !== m.content) out = { ...m, content: parts };
  }
  for (const key of STRING_FIELDS) {
    const v = m[key];
    if (typeof v !== 'string') continue;
    // A refusal is the turn's text to a translator (Gemini sends it when there is no content).
    const t = f(v, key === 'refusal');
    if (t !== v) out = { ...(out ?? m), [key]: t };
  }
  if (Array.isArray(m.tool_calls)) {
    const calls = mapToolCalls(m.tool_calls, f);
    if (calls !== m.tool_calls) out = { ...(out ?? m), tool_calls: calls };
  }
  // The deprecated single function_call of older clients.
  const fc = m.function_call;
  if (isObj(fc)) {
    const t = mapFunction(fc, f);
    if (t !== fc) out = { ...(out ?? m), function_call: t };
  }
  if (isObj(m.audio)) {
    const t = mapOtherMembers(m.audio, AUDIO_READ, f);
    if (t !== m.audio) out = { ...(out ?? m), audio: t };
  }
  // thinking_blocks and anything else: every string in it. A signature or a redacted block's
  // ciphertext is as much the caller's to fill as the thinking text is.
  return mapOtherMembers(out ?? m, MESSAGE_READ, f);
}

/** The request's own members (not its messages) with `f` applied to every string of those that may hold caller text. */
function mapRequestTexts(raw: Readonly<Record<string, unknown>>, f: MapText): Record<string, unknown> {
  const out = mapOtherMembers(raw as Record<string, unknown>, REQUEST_SETTINGS, f);
  const search = raw.web_search_options;
  if (!isObj(search)) return out;
  const t = mapUserLocation(search, f);
  return t === search ? out : { ...out, web_search_options: t };
}

/** A chat request's texts: its messages', then its own members'. */
export interface ChatTexts { messages: ChatMessage[]; raw: Record<string, unknown> }

/** The request with `f` applied to each text; objects are copied only where a text changed, never mutated. */
function mapChatTexts(chat: Readonly<ChatTexts>, f: MapText, units?: ReadingUnits): ChatTexts {
  const messages = chat.messages.map((m) => {
    units?.enter(turnOf(m), isResult(m) ? 'alone' : 'turn');
    return mapMessage(m, f);
  });
  return { messages, raw: mapRequestTexts(chat.raw, f) };
}

/** A tool's result: its content is read as JSON, alone, in the user turn it is merged into. */
const isResult = (m: ChatMessage): boolean => m.role === 'tool' || m.role === 'function';

function turnOf(m: ChatMessage): Turn | undefined {
  switch (m.role) {
    case 'system': case 'developer': return 'system';
    case 'user': case 'tool': case 'function': return 'user';
    case 'assistant': return 'assistant';
    default: return undefined;
  }
}

export function collectTexts(chat: Readonly<ChatTexts>): CollectedTexts {
  const texts: string[] = [];
  const units = new ReadingUnits();
  mapChatTexts(chat, (t, content) => { units.text(texts.length, content, t); texts.push(t); return t; }, units);
  return { texts, groups: units.groups() };
}

export function replaceTexts(chat: Readonly<ChatTexts>, texts: readonly string[]): ChatTexts {
  let i = 0;
  return mapChatTexts(chat, () => texts[i++]!);
}
