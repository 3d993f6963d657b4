// Responses input items -> chat messages, for providers without a Responses
// API. Messages keep their role; function_call items become an assistant
// turn's tool_calls (consecutive calls join one turn, as parallel calls do in
// chat), and so does an assistant message after them, before their results;
// function_call_output items become `tool` messages. A reasoning item
// is left out, but the signed thinking sluice sealed in it goes back on the
// assistant turn that follows it to an Anthropic upstream, and a call's
// extra_content on its tool call to a Gemini one (signed-reasoning.ts). Any
// other item type is refused with a 400 naming it, and so is any member of an
// item, a content part or a tool that has no chat equivalent: the members an
// item has as output (`id`, `status`, a text's `annotations` and `logprobs`)
// describe an earlier answer and are left behind, nothing else is.
import type { ChatMessage, ContentPart, ToolCall } from '../domain.js';
import { GatewayError } from '../errors.js';
import { onlyKnown } from './request-to-chat.js';
import { extraContentOf, thinkingOf } from './signed-reasoning.js';
import { isObj, type Item } from './types.js';

const ROLES = new Set(['user', 'system', 'developer', 'assistant']);
const TEXT_PARTS = new Set(['input_text', 'output_text', 'text']);

/** The members an item of each type may carry. A map: a caller's type "__proto__" would find Object.prototype's. */
const ITEM_MEMBERS: ReadonlyMap<unknown, ReadonlySet<string>> = new Map([
  ['message', new Set(['type', 'id', 'status', 'role', 'content'])],
  ['function_call', new Set(['type', 'id', 'status', 'call_id', 'name', 'arguments', 'extra_content'])],
  ['function_call_output', new Set(['type', 'id', 'status', 'call_id', 'output'])],
  // Its summary and OpenAI's own encrypted_content mean something to OpenAI only; ours is read (signed-reasoning.ts).
  ['reasoning', new Set(['type', 'id', 'status', 'summary', 'content', 'encrypted_content'])],
]);
const TEXT_MEMBERS = new Set(['type', 'text', 'annotations', 'logprobs']);
const REFUSAL_MEMBERS = new Set(['type', 'refusal']);
const IMAGE_MEMBERS = new Set(['type', 'image_url', 'file_id', 'detail']);

const refuse = (param: string, what: string): never => {
  throw new GatewayError('invalid_request', `${what} needs a provider with a native Responses API.`, { param });
};

/** A message's content as chat content: a string when it is all text, parts when it holds an image. */
function content(item: Item, at: string): { content: string | ContentPart[]; refusal?: string } {
  if (typeof item.content === 'string') return { content: item.content };
  if (!Array.isArray(item.content)) throw new GatewayError('invalid_request', `${at}.content must be a string or a list of parts.`, { param: `${at}.content` });
  const parts: ContentPart[] = [];
  let refusal: string | undefined;
  let image = false;
  item.content.forEach((p, j) => {
    const where = `${at}.content.${j}`;
    if (!isObj(p)) throw new GatewayError('invalid_request', `${where} must be an object.`, { param: where });
    if (TEXT_PARTS.has(p.type as string) && typeof p.text === 'string') {
      onlyKnown(p, TEXT_MEMBERS, where);
      parts.push({ type: 'text', text: p.text });
    } else if (p.type === 'refusal' && typeof p.refusal === 'string') {
      onlyKnown(p, REFUSAL_MEMBERS, where);
      refusal = (refusal ?? '') + p.refusal;
    } else if (p.type === 'input_image') {
      onlyKnown(p, IMAGE_MEMBERS, where);
      if (typeof p.image_url !== 'string') refuse(`${where}.file_id`, 'An image given by file id');
      parts.push({ type: 'image_url', image_url: { url: p.image_url, ...(typeof p.detail === 'string' ? { detail: p.detail } : {}) } });
      image = true;
    } else refuse(`${where}.type`, `A content part of type "${String(p.type)}"`);
  });
  const out = image ? parts : parts.map((p) => p.text).join('');
  return refusal === undefined ? { content: out } : { content: out, refusal };
}

function outputText(output: unknown, at: string): string {
  if (typeof output === 'string') return output;
  if (Array.isArray(output)) {
    return output.map((p, j) => {
      if (isObj(p) && TEXT_PARTS.has(p.type as string) && typeof p.text === 'string') {
        onlyKnown(p, TEXT_MEMBERS, `${at}.output.${j}`);
        return p.text;
      }
      return refuse(`${at}.output.${j}`, 'A tool output that is not text');
    }).join('');
  }
  throw new GatewayError('invalid_request', `${at}.output must be a string.`, { param: `${at}.output` });
}

/**
 * What the upstream reads back of another turn's signed reasoning: Anthropic
 * its thinking blocks, Gemini a call's signature. Any other has nowhere to put
 * them, and a strict OpenAI-compatible server would refuse the member.
 */
export interface Carry { thinking: boolean; extraContent: boolean }

const NOTHING: Carry = { thinking: false, extraContent: false };

/**
 * The item each message was made from, by the name `param` gave it: a chat
 * adapter's 400 names a message (`messages.4.tool_call_id`), and the caller
 * sent items (`input.6`), so the error is given back under the item's name.
 */
export const messageOrigin = new WeakMap<ChatMessage, string>();

/** `param(i)` names item i in errors: `input.3`, or the stored conversation. */
export function itemsToMessages(items: readonly Item[], param: (i: number) => string, carry: Carry = NOTHING): ChatMessage[] {
  const messages: ChatMessage[] = [];
  const push = (m: ChatMessage, at: string) => { messageOrigin.set(m, at); messages.push(m); };
  /** Thinking blocks of the reasoning just read, for the assistant turn after it. */
  let thinking: unknown[] | undefined;
  const takeThinking = (m: ChatMessage) => {
    // A turn's later reasoning (thinking between its calls) joins the blocks it already has.
    if (thinking) m.thinking_blocks = Array.isArray(m.thinking_blocks) ? [...m.thinking_blocks, ...thinking] : thinking;
    thinking = undefined;
  };
  items.forEach((item, i) => {
    const at = param(i);
    const known = ITEM_MEMBERS.get(item.type);
    if (known) onlyKnown(item, known, at);
    switch (item.type) {
      case 'message': {
        const role = item.role;
        if (typeof role !== 'string' || !ROLES.has(role)) throw new GatewayError('invalid_request', `${at}.role must be user, system, developer or assistant.`, { param: `${at}.role` });
        const c = content(item, at);
        // Text the model wrote after its calls (Anthropic's text, tool_use, text) belongs to the turn that made
        // them: a chat upstream wants that turn's tool results next, and would refuse an assistant message between.
        const turn = messages.at(-1);
        if (role === 'assistant' && turn?.role === 'assistant' && turn.tool_calls?.length && typeof c.content === 'string' && c.refusal === undefined && typeof turn.content !== 'object') {
          turn.content = (turn.content ?? '') + c.content;
          takeThinking(turn);
          return;
        }
        const m: ChatMessage = { role, content: c.content };
        if (c.refusal !== undefined) m.refusal = c.refusal;
        if (role === 'assistant') takeThinking(m);
        else thinking = undefined;
        push(m, at);
        return;
      }
      case 'function_call': {
        if (typeof item.call_id !== 'string' || typeof item.name !== 'string' || typeof item.arguments !== 'string') {
          throw new GatewayError('invalid_request', `${at}: a function_call needs call_id, name and arguments.`, { param: at });
        }
        const call: ToolCall = { id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } };
        const extra = carry.extraContent ? extraContentOf(item) : undefined;
        if (extra) call.extra_content = extra;
        let turn = messages.at(-1);
        if (turn?.role === 'assistant' && !turn.refusal) (turn.tool_calls ??= []).push(call);
        else push(turn = { role: 'assistant', content: null, tool_calls: [call] }, at);
        takeThinking(turn);
        return;
      }
      case 'function_call_output': {
        if (typeof item.call_id !== 'string') throw new GatewayError('invalid_request', `${at}.call_id is required.`, { param: `${at}.call_id` });
        thinking = undefined;
        push({ role: 'tool', tool_call_id: item.call_id, content: outputText(item.output, at) }, at);
        return;
      }
      case 'reasoning': {
        const blocks = carry.thinking ? thinkingOf(item) : undefined;
        if (blocks) thinking = [...(thinking ?? []), ...blocks];
        return;
      }
      default:
        refuse(`${at}.type`, `An input item of type "${String(item.type)}"`);
    }
  });
  return messages;
}
