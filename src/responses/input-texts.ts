// Every text of a Responses request that the upstream will read and that can
// carry a caller's data: the instructions, message text parts (input_text,
// output_text, refusal), function-call arguments, function-call outputs
// (tool results), a reasoning item's summary and the thinking sluice sealed
// in it (signed-reasoning.ts), which goes back to an Anthropic upstream; and,
// as for chat (message-texts.ts), every string in any other member of an item
// or of the request, known or not (`metadata`, `user`, a prompt's variables,
// an item type sluice does not read), since the native path sends them as
// they are. Only members that hold no caller text are left out. One walker
// serves both directions, so collecting and replacing can never disagree on
// the order. Collecting also says whose turn each item is, for the texts the
// model reads as one (reading-units.ts); an item's `output` that is neither
// a string nor parts is read whole (until 2026-11-29 it was not read).
import { ReadingUnits, type CollectedTexts, type Turn } from '../policy/reading-units.js';
import { mapArguments, mapJson, mapOtherMembers, mapResultParts, mapTextParts, mapUserLocation, type MapText } from '../policy/text-walk.js';
import { mapSealedThinking } from './signed-reasoning.js';
import { isObj, type Item, type Json } from './types.js';

const TEXT_PARTS = new Set(['input_text', 'output_text', 'text', 'summary_text']);

const responsesPartKey = (p: Record<string, unknown>): string | undefined =>
  (p.type === 'refusal' ? 'refusal' : TEXT_PARTS.has(p.type as string) ? 'text' : undefined);

/** A string or a list of parts (their texts; every other string too when `whole`); anything else is returned as is. */
function mapContent(content: unknown, f: MapText, whole: boolean): unknown {
  if (typeof content === 'string') return f(content, true);
  if (Array.isArray(content)) return mapTextParts(content, responsesPartKey, f, whole);
  return content;
}

/** An item's members that hold no caller text, whatever its type. */
const STRUCTURAL = ['type', 'id', 'status', 'call_id', 'role', 'name'];

/**
 * Per type, the members the generic walk leaves alone: those, and the ones
 * mapRead's case reads itself. A map: a caller's type "__proto__" would find
 * Object.prototype's.
 */
const SKIP: ReadonlyMap<unknown, ReadonlySet<string>> = new Map([
  ['message', new Set([...STRUCTURAL, 'content'])],
  ['function_call', new Set([...STRUCTURAL, 'arguments'])],
  ['function_call_output', new Set([...STRUCTURAL, 'output'])],
  ['reasoning', new Set([...STRUCTURAL, 'summary', 'encrypted_content'])],
]);
const ANY_TYPE: ReadonlySet<string> = new Set(STRUCTURAL);

/**
 * The request's members that hold no caller text: settings, and what the
 * application writes (tools, formats). Not `prompt_cache_key`, which chat
 * reads too: the caller may fill it with anything (until 2026-11-29 it went
 * unscanned here). A web_search tool's `user_location` is read apart.
 */
const REQUEST_SETTINGS: ReadonlySet<string> = new Set([
  'model', 'input', 'instructions', 'stream', 'stream_options', 'store', 'previous_response_id', 'conversation', 'background',
  'max_output_tokens', 'max_tool_calls', 'temperature', 'top_p', 'top_logprobs', 'tools', 'tool_choice', 'parallel_tool_calls',
  'text', 'reasoning', 'include', 'truncation', 'service_tier', 'prompt_cache_retention',
]);

/** The request's members but its settings, and the `user_location` of each tool that has one (a web_search tool's). */
function mapRequestMembers(raw: Json, f: MapText): Json {
  const out = mapOtherMembers(raw, REQUEST_SETTINGS, f);
  if (!Array.isArray(raw.tools)) return out;
  let tools: unknown[] | undefined;
  raw.tools.forEach((tool: unknown, i: number) => {
    if (!isObj(tool)) return;
    const t = mapUserLocation(tool, f);
    if (t !== tool) (tools ??= (raw.tools as unknown[]).slice())[i] = t;
  });
  return tools === undefined ? out : { ...out, tools };
}

/** OpenAI's own encrypted_content, as the one string it is. */
function mapCiphertext(item: Item, f: MapText): Item {
  const v = item.encrypted_content;
  if (typeof v !== 'string') return item;
  const t = f(v);
  return t === v ? item : { ...item, encrypted_content: t };
}

function mapRead(item: Item, f: MapText, whole: boolean): Item {
  switch (item.type) {
    case 'message': {
      const c = mapContent(item.content, f, whole);
      return c === item.content ? item : { ...item, content: c };
    }
    case 'function_call': {
      if (typeof item.arguments !== 'string') return item;
      // JSON text, as a chat tool call's: it must still parse after DLP.
      const a = mapArguments(item.arguments, f);
      return a === item.arguments ? item : { ...item, arguments: a };
    }
    case 'function_call_output': {
      // For a policy, a tool's JSON result is read value by value, escapes decoded, as chat's tool
      // messages are (message-texts.ts): a translator may decode it (Gemini sends it as an object).
      const o = !whole ? mapContent(item.output, f, false)
        : typeof item.output === 'string' ? mapArguments(item.output, f)
          : Array.isArray(item.output) ? mapResultParts(item.output, responsesPartKey, f, true) : mapJson(item.output, f);
      return o === item.output ? item : { ...item, output: o };
    }
    case 'reasoning': {
      const summary = mapContent(item.summary, f, whole);
      // Ours is unsealed and read block by block; OpenAI's own, for a policy, is a string like any other.
      const sealed = mapSealedThinking(item, f) ?? (whole ? mapCiphertext(item, f) : item);
      return summary === item.summary ? sealed : { ...sealed, summary };
    }
    default:
      return item;
  }
}

function mapItem(item: Item, f: MapText, whole: boolean): Item {
  if (!whole) return mapRead(item, f, false);
  // The case's own members, then every other that may hold caller text.
  return mapOtherMembers(mapRead(item, f, true), SKIP.get(item.type) ?? ANY_TYPE, f);
}

/**
 * `raw`, the request's members, is given for a policy: the items' other
 * members and the request's are then walked too. Without one, only the
 * prompt's texts are read (for its estimate), and nothing else is walked.
 */
export interface GuardableInput { instructions: string | undefined; items: readonly Item[]; raw?: Json }

export interface GuardedInput { instructions: string | undefined; items: Item[]; raw: Json | undefined }

/** The input with `f` applied to each text; objects are copied only where a text changed, never mutated. */
export function mapInputTexts(input: GuardableInput, f: MapText, units?: ReadingUnits): GuardedInput {
  units?.enter('system', 'turn');
  const instructions = input.instructions === undefined ? undefined : f(input.instructions, true);
  const whole = input.raw !== undefined;
  const items = input.items.map((it) => {
    units?.enter(turnOf(it), it.type === 'message' ? 'turn' : it.type === 'function_call_output' ? 'alone' : 'none');
    return mapItem(it, f, whole);
  });
  return { instructions, items, raw: input.raw && mapRequestMembers(input.raw, f) };
}

/** Whose turn an item is in when the translated path makes it a chat message (items-to-messages.ts). */
function turnOf(item: Item): Turn | undefined {
  switch (item.type) {
    case 'message':
      return item.role === 'system' || item.role === 'developer' ? 'system' : item.role === 'assistant' ? 'assistant' : item.role === 'user' ? 'user' : undefined;
    case 'function_call': case 'reasoning': return 'assistant';
    case 'function_call_output': return 'user';
    default: return undefined;
  }
}

export function collectInputTexts(input: GuardableInput): CollectedTexts {
  const texts: string[] = [];
  const units = new ReadingUnits();
  mapInputTexts(input, (t, content) => { units.text(texts.length, content, t); texts.push(t); return t; }, units);
  return { texts, groups: units.groups() };
}

export function replaceInputTexts(input: GuardableInput, texts: readonly string[]): GuardedInput {
  let i = 0;
  return mapInputTexts(input, () => texts[i++]!);
}
