// OpenAI messages -> Anthropic `system` and `messages`.
//
// System and developer messages become `system`. An assistant's tool_calls
// become `tool_use` blocks (after the thinking blocks it carried back, which
// Anthropic needs with their signatures to continue a tool loop); a `tool`
// message becomes a `tool_result` block in a user turn. Turns of one role are
// merged, and in a user turn the tool results come first, as Anthropic
// requires of the turn that answers a tool_use.
import type { ChatMessage, ContentPart } from '../../domain.js';
import { GatewayError } from '../../errors.js';
import { isObj } from '../json-shape.js';
import { refuseUnknownMembers, SDK_PARSED_ARGUMENTS, SDK_PARSED_MESSAGE } from '../known-members.js';
import { contentBlocks } from '../message-content.js';

type Json = Record<string, any>;
export interface AnthropicMessage { role: 'user' | 'assistant'; content: Json[] }

const refuse = (param: string, message: string): never => {
  throw new GatewayError('invalid_request', message, { param });
};

/**
 * Message fields Anthropic has nowhere to put and that change nothing it could
 * honour: `name` (turns have no speaker names), `refusal` and `annotations`
 * (an earlier answer's, its citations), an earlier turn's reasoning text,
 * `reasoning_content` or `reasoning` (Claude resumes from its signed
 * `thinking_blocks`, which are sent), and the openai SDK's `parsed`. Any other
 * unknown field is refused.
 */
const MESSAGE_KEYS = new Set(['role', 'content', 'name', 'tool_calls', 'tool_call_id', 'refusal', 'annotations', 'reasoning_content', 'reasoning', 'thinking_blocks', SDK_PARSED_MESSAGE]);
/** A call's members: Google's `extra_content` (a Gemini thought signature, in a chain begun there) means nothing to Claude. */
const CALL_KEYS = new Set(['id', 'type', 'function', 'extra_content']);
const CALL_FUNCTION_KEYS = new Set(['name', 'arguments', SDK_PARSED_ARGUMENTS]);
/** `detail` is a resolution hint with no Anthropic counterpart; the model still sees the image. */
const IMAGE_URL_KEYS = new Set(['url', 'detail']);

function image(p: ContentPart, at: string): Json {
  if (isObj(p.image_url)) refuseUnknownMembers(p.image_url, IMAGE_URL_KEYS, `${at}.image_url`, 'Anthropic');
  const url = (p.image_url as { url?: unknown } | undefined)?.url;
  if (typeof url !== 'string' || url === '') return refuse(`${at}.image_url.url`, `${at}.image_url.url must be a URL.`);
  if (!url.startsWith('data:')) return { type: 'image', source: { type: 'url', url } };
  const m = /^data:([^;,]+)((?:;[^;,]*)*);base64,(.*)$/s.exec(url);
  if (!m) return refuse(`${at}.image_url.url`, `${at}.image_url.url must be a base64 data URL (data:<type>;base64,...).`);
  return { type: 'image', source: { type: 'base64', media_type: m[1], data: m[3] } };
}

function blocks(m: ChatMessage, i: number): Json[] {
  const images = m.role === 'user' ? (p: ContentPart, at: string) => (p?.type === 'image_url' ? image(p, at) : undefined) : undefined;
  return contentBlocks(m, i, 'Anthropic', 'send', (text) => ({ type: 'text', text }), images);
}

function thinking(m: ChatMessage, i: number): Json[] {
  const t = m.thinking_blocks;
  if (t == null) return [];
  if (!Array.isArray(t)) return refuse(`messages.${i}.thinking_blocks`, `messages.${i}.thinking_blocks must be an array.`);
  return t.map((b, j) => {
    const at = `messages.${i}.thinking_blocks.${j}`;
    if (isObj(b) && b.type === 'thinking' && typeof b.thinking === 'string' && typeof b.signature === 'string') return { type: 'thinking', thinking: b.thinking, signature: b.signature };
    if (isObj(b) && b.type === 'redacted_thinking' && typeof b.data === 'string') return { type: 'redacted_thinking', data: b.data };
    return refuse(at, `${at} must be a thinking block with its signature, or a redacted_thinking block.`);
  });
}

function toolUses(m: ChatMessage, i: number): Json[] {
  if (m.tool_calls == null) return [];
  if (!Array.isArray(m.tool_calls)) return refuse(`messages.${i}.tool_calls`, `messages.${i}.tool_calls must be an array.`);
  return m.tool_calls.map((call, j) => {
    const at = `messages.${i}.tool_calls.${j}`;
    if (!isObj(call) || call.type !== 'function' || !isObj(call.function) || typeof call.function.name !== 'string' || typeof call.id !== 'string') {
      return refuse(at, `${at} must be a function call with an id and a name.`);
    }
    refuseUnknownMembers(call, CALL_KEYS, at, 'Anthropic');
    refuseUnknownMembers(call.function, CALL_FUNCTION_KEYS, `${at}.function`, 'Anthropic');
    let input: unknown;
    try { input = JSON.parse(call.function.arguments || '{}'); } catch { input = undefined; }
    // Anthropic's input is a JSON object; a string or array has nowhere to go.
    if (!isObj(input) || Array.isArray(input)) refuse(`${at}.function.arguments`, `${at}.function.arguments must be a JSON object.`);
    return { type: 'tool_use', id: call.id, name: call.function.name, input };
  });
}

function toolResult(m: ChatMessage, i: number): Json {
  if (typeof m.tool_call_id !== 'string' || m.tool_call_id === '') return refuse(`messages.${i}.tool_call_id`, `messages.${i}.tool_call_id is required on a tool message.`);
  const content = blocks({ ...m, role: 'tool' }, i).filter((b) => b.type === 'text');
  return { type: 'tool_result', tool_use_id: m.tool_call_id, content };
}

/** `system` is text blocks: sent joined as one string unless one carries a cache_control mark. */
export function translateMessages(messages: readonly ChatMessage[]): { system: Json[]; messages: AnthropicMessage[] } {
  const system: Json[] = [];
  const out: AnthropicMessage[] = [];
  const push = (role: 'user' | 'assistant', content: Json[]) => {
    if (content.length === 0) return;
    const last = out[out.length - 1];
    if (last && last.role === role) last.content.push(...content);
    else out.push({ role, content: [...content] });
  };
  messages.forEach((m, i) => {
    refuseUnknownMembers(m, MESSAGE_KEYS, `messages.${i}`, 'Anthropic');
    switch (m.role) {
      case 'system':
      case 'developer':
        for (const b of blocks({ ...m, role: 'system' }, i)) if (b.type === 'text') system.push(b);
        return;
      case 'user': return push('user', blocks(m, i));
      case 'assistant': return push('assistant', [...thinking(m, i), ...blocks(m, i), ...toolUses(m, i)]);
      case 'tool': return push('user', [toolResult(m, i)]);
      default: return refuse(`messages.${i}.role`, `Messages with role ${JSON.stringify(m.role)} are not supported for Anthropic models; send tool messages.`);
    }
  });
  for (const turn of out) {
    // The user turn answering a tool_use must open with its tool_result blocks.
    if (turn.role === 'user') turn.content.sort((a, b) => Number(b.type === 'tool_result') - Number(a.type === 'tool_result'));
  }
  if (out.length === 0) refuse('messages', 'At least one user or assistant message with content is required.');
  return { system, messages: out };
}
