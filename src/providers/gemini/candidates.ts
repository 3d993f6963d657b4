// What one Gemini candidate means in OpenAI terms: finish reasons, and parts
// as content, reasoning and tool calls. Shared by the JSON and stream paths so
// both give the same answer, tool-call ids included.
import { createHash } from 'node:crypto';
import type { ToolCall } from '../../domain.js';
import { GatewayError } from '../../errors.js';
import { addPart, type AnswerPart } from '../answer-order.js';
import { isObj, ownEntry } from '../json-shape.js';

type Json = Record<string, any>;

const FINISH: Record<string, string> = {
  STOP: 'stop',
  MAX_TOKENS: 'length',
  SAFETY: 'content_filter',
  RECITATION: 'content_filter',
  BLOCKLIST: 'content_filter',
  PROHIBITED_CONTENT: 'content_filter',
  SPII: 'content_filter',
  IMAGE_SAFETY: 'content_filter',
};

/**
 * A function call Gemini could not form has no OpenAI finish reason; read as
 * `stop` it would pass for an empty answer and end an agent's loop silently.
 * It fails the call instead (a 502 the SDKs retry, or the stream's error event).
 */
const FAILED = new Set(['MALFORMED_FUNCTION_CALL', 'UNEXPECTED_TOOL_CALL', 'TOO_MANY_TOOL_CALLS']);

/**
 * Gemini finishReason -> OpenAI finish_reason. STOP after a function call is
 * `tool_calls`, which agent loops test for. OTHER, LANGUAGE and reasons added
 * later read as a normal stop.
 */
export function finishReason(reason: unknown, calledTools: boolean): string {
  if (typeof reason === 'string' && FAILED.has(reason)) {
    throw new GatewayError('upstream_error', `Gemini ended the answer with ${reason}: it produced no usable function call. Retry the request.`);
  }
  if (reason === 'STOP' && calledTools) return 'tool_calls';
  return (typeof reason === 'string' && ownEntry(FINISH, reason)) || 'stop';
}

/**
 * Gemini gives a call an id only on some surfaces. Otherwise the id is derived
 * from the answer itself (response id, candidate, position, name, arguments),
 * so the JSON and stream paths, and a replay of the same answer, agree on it.
 */
export function toolCallId(part: Json, responseId: unknown, candidate: number, k: number): string {
  const own = part.functionCall?.id;
  if (typeof own === 'string' && own) return own;
  const h = createHash('sha256')
    .update(`${typeof responseId === 'string' ? responseId : ''}\0${candidate}\0${k}\0${part.functionCall?.name}\0${JSON.stringify(part.functionCall?.args ?? {})}`)
    .digest('base64url');
  return `call_${h.slice(0, 22)}`;
}

/** Whether `id` is one toolCallId derived (Gemini gave none): such an id means nothing to Gemini. */
export const isDerivedCallId = (id: string): boolean => /^call_[\w-]{22}$/.test(id);

/** An OpenAI tool call for a functionCall part; the thought signature rides along as Google's compatibility layer carries it. */
export function toolCall(part: Json, id: string): ToolCall {
  const fc = part.functionCall;
  const call: ToolCall = { id, type: 'function', function: { name: String(fc.name), arguments: JSON.stringify(fc.args ?? {}) } };
  if (typeof part.thoughtSignature === 'string') call.extra_content = { google: { thought_signature: part.thoughtSignature } };
  return call;
}

/** `order`: the parts in the model's order, a call by its place in `calls` (answer-order.ts). */
export interface PartsRead { text: string; reasoning: string; calls: Json[]; order: AnswerPart[] }

/**
 * Splits a candidate's parts. A part holding something the chat shape cannot
 * carry (inline images, executed code) fails the call rather than vanish.
 */
export function readParts(candidate: Json): PartsRead {
  const out: PartsRead = { text: '', reasoning: '', calls: [], order: [] };
  const parts = candidate.content?.parts;
  if (!Array.isArray(parts)) return out;
  for (const p of parts) {
    if (!isObj(p)) continue;
    if (isObj(p.functionCall)) addPart(out.order, { kind: 'call', index: out.calls.push(p) - 1 });
    else if (typeof p.text === 'string') {
      if (p.thought === true) out.reasoning += p.text;
      else out.text += p.text;
      addPart(out.order, p.thought === true ? { kind: 'reasoning', text: p.text, blocks: [] } : { kind: 'text', text: p.text });
    } else if (Object.keys(p).some((k) => k !== 'thoughtSignature' && k !== 'thought')) {
      const kind = Object.keys(p).find((k) => k !== 'thoughtSignature' && k !== 'thought');
      throw new GatewayError('upstream_error', `Gemini answered with a "${kind}" part, which an OpenAI chat completion cannot carry.`);
    }
  }
  return out;
}
