// OpenAI messages -> Gemini `systemInstruction` and `contents`.
//
// System and developer messages become `systemInstruction`; "assistant" is
// Gemini's "model" role; a tool result is a `functionResponse` part in a user
// turn, named after the call it answers. Gemini wants user and model turns to
// alternate, so consecutive turns of one role are merged (several tool results
// in a row become one turn, as Gemini expects parallel answers). A call's id
// goes with it and with its answer, unless sluice derived it (Gemini gave
// none), and parallel answers go in the order of their calls: without ids,
// that order is all Gemini has to match an answer to its call.
import type { ChatMessage } from '../../domain.js';
import { GatewayError } from '../../errors.js';
import { isObj } from '../json-shape.js';
import { refuseUnknownMembers, SDK_PARSED_ARGUMENTS, SDK_PARSED_MESSAGE } from '../known-members.js';
import { contentBlocks } from '../message-content.js';
import { isDerivedCallId } from './candidates.js';
import { mediaPart } from './media.js';

type Json = Record<string, any>;
export interface Content { role: 'user' | 'model'; parts: Json[] }

const refuse = (param: string, message: string): never => {
  throw new GatewayError('invalid_request', message, { param });
};

/**
 * Message fields with no Gemini counterpart that change nothing Gemini could
 * honour: `name` (Gemini turns have no speaker names), an earlier answer's
 * `annotations` (its citations), an earlier turn's `reasoning_content` (or
 * `reasoning`, as vLLM and OpenRouter spell it) and `thinking_blocks` (Gemini
 * resumes its reasoning from its own thought signatures, not from the text or
 * Anthropic's signed blocks; a Responses chain begun on Claude carries those),
 * and the openai SDK's `parsed`. Any other unknown field is refused.
 */
const MESSAGE_KEYS = new Set(['role', 'content', 'name', 'tool_calls', 'tool_call_id', 'refusal', 'annotations', 'reasoning_content', 'reasoning', 'thinking_blocks', SDK_PARSED_MESSAGE]);
/** A call's members; `extra_content` carries Google's thought signature (below). */
const CALL_KEYS = new Set(['id', 'type', 'function', 'extra_content']);
const CALL_FUNCTION_KEYS = new Set(['name', 'arguments', SDK_PARSED_ARGUMENTS]);

function parts(m: ChatMessage, i: number, allowMedia: boolean): Json[] {
  return contentBlocks(m, i, 'Gemini', 'drop', (text) => ({ text }), allowMedia ? mediaPart : undefined);
}

/** A tool call of an earlier assistant turn: its name, and its place among that turn's calls. */
interface CallSite { name: string; turn: number; place: number }

/** Where each functionResponse part sits among its turn's calls, for putting parallel answers in order. */
const answerPlace = new WeakMap<Json, CallSite>();

function functionCalls(m: ChatMessage, i: number, calls: Map<string, CallSite>): Json[] {
  if (m.tool_calls == null) return [];
  if (!Array.isArray(m.tool_calls)) return refuse(`messages.${i}.tool_calls`, `messages.${i}.tool_calls must be an array.`);
  return m.tool_calls.map((call, j) => {
    const at = `messages.${i}.tool_calls.${j}`;
    if (!isObj(call) || call.type !== 'function' || !isObj(call.function) || typeof call.function.name !== 'string') {
      return refuse(at, `${at} must be a function call with a name.`);
    }
    refuseUnknownMembers(call, CALL_KEYS, at, 'Gemini');
    refuseUnknownMembers(call.function, CALL_FUNCTION_KEYS, `${at}.function`, 'Gemini');
    let args: unknown;
    try { args = JSON.parse(call.function.arguments || '{}'); } catch { args = undefined; }
    // Gemini's args are a JSON object (a protobuf Struct); a string or array has nowhere to go.
    if (!isObj(args) || Array.isArray(args)) refuse(`${at}.function.arguments`, `${at}.function.arguments must be a JSON object.`);
    const id = typeof call.id === 'string' ? call.id : undefined;
    if (id !== undefined) calls.set(id, { name: call.function.name, turn: i, place: j });
    const part: Json = { functionCall: id !== undefined && !isDerivedCallId(id) ? { id, name: call.function.name, args } : { name: call.function.name, args } };
    // Google's OpenAI-compatible endpoint carries the signature here; without it Gemini loses its reasoning state.
    const signature = (call.extra_content as Json | undefined)?.google?.thought_signature;
    if (typeof signature === 'string') part.thoughtSignature = signature;
    return part;
  });
}

function functionResponse(m: ChatMessage, i: number, calls: Map<string, CallSite>): Json {
  const id = typeof m.tool_call_id === 'string' ? m.tool_call_id : undefined;
  const site = id === undefined ? undefined : calls.get(id);
  if (site === undefined) {
    return refuse(`messages.${i}.tool_call_id`, `messages.${i}.tool_call_id matches no tool call of an earlier assistant message.`);
  }
  const text = parts(m, i, false).map((p) => p.text).join('');
  let response: unknown;
  try { response = JSON.parse(text); } catch { response = undefined; }
  // A JSON object result is given as is; anything else (plain text, arrays, numbers) is wrapped, as Gemini wants an object.
  if (!isObj(response) || Array.isArray(response)) response = { content: text };
  const part = { functionResponse: isDerivedCallId(id!) ? { name: site.name, response } : { id, name: site.name, response } };
  answerPlace.set(part, site);
  return part;
}

/**
 * Appends a tool answer to the user turn it joins, before any answer of the same
 * assistant turn whose call came later: a caller may send parallel results in
 * any order (they finish when they finish), Gemini reads them in call order.
 */
function pushAnswer(turn: Json[], part: Json): void {
  const site = answerPlace.get(part)!;
  let at = turn.length;
  for (;;) {
    const before = at > 0 ? answerPlace.get(turn[at - 1]!) : undefined;
    if (!before || before.turn !== site.turn || before.place < site.place) break;
    at--;
  }
  turn.splice(at, 0, part);
}

export function toContents(messages: ChatMessage[]): { systemInstruction?: Json; contents: Content[] } {
  const system: Json[] = [];
  const contents: Content[] = [];
  /** tool_call_id -> its call, from the assistant turns seen so far. */
  const calls = new Map<string, CallSite>();
  messages.forEach((m, i) => {
    refuseUnknownMembers(m, MESSAGE_KEYS, `messages.${i}`, 'Gemini');
    let role: Content['role'];
    let turn: Json[];
    switch (m.role) {
      case 'system': case 'developer':
        system.push(...parts(m, i, false));
        return;
      case 'user':
        role = 'user'; turn = parts(m, i, true);
        break;
      case 'assistant':
        role = 'model'; turn = [...parts(m, i, false), ...functionCalls(m, i, calls)];
        if (turn.length === 0 && typeof m.refusal === 'string' && m.refusal) turn = [{ text: m.refusal }];
        break;
      case 'tool': {
        const part = functionResponse(m, i, calls);
        const last = contents[contents.length - 1];
        if (last?.role === 'user') pushAnswer(last.parts, part);
        else contents.push({ role: 'user', parts: [part] });
        return;
      }
      default:
        return refuse(`messages.${i}.role`, `Messages with role ${JSON.stringify(m.role)} are not supported for Gemini models.`);
    }
    if (turn.length === 0) return;
    const last = contents[contents.length - 1];
    if (last && last.role === role) last.parts.push(...turn);
    else contents.push({ role, parts: turn });
  });
  if (contents.length === 0) refuse('messages', 'At least one user or assistant message with content is required.');
  return system.length > 0 ? { systemInstruction: { parts: system }, contents } : { contents };
}
