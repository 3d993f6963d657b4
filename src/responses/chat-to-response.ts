// A chat completion -> a Responses `response` object, for providers without a
// Responses API. The object carries the fields the real API returns, echoing
// the request's settings, so SDKs that read them (instructions, tools, text,
// previous_response_id, ...) find what they would find at OpenAI.
import type { AssistantMessage, ChatCompletion, ToolCall, Usage } from '../domain.js';
import { answerOrder, type AnswerPart } from '../providers/answer-order.js';
import { GatewayError } from '../errors.js';
import { extraContentOf, sealThinking } from './signed-reasoning.js';
import { isObj, type Item, type Json, type ResponseObject, type ResponsesRequest, type ResponseUsage } from './types.js';

/** Item ids embed the response's own hex id, so an `item_reference` leads back to its stored response. */
export class ItemIds {
  private n = 0;
  constructor(readonly hex: string) {}
  next(prefix: 'msg' | 'fc' | 'rs'): string { return `${prefix}_${this.hex}_${this.n++}`; }
}

/** The response id an item id of ours belongs to, or undefined for anyone else's. */
export function responseIdOfItem(itemId: string): string | undefined {
  const m = /^(?:msg|fc|rs)_([0-9a-f]{32})_\d+$/.exec(itemId);
  return m ? `resp_${m[1]}` : undefined;
}

export function toResponsesUsage(u: Usage | undefined | null): ResponseUsage {
  const input = Number(u?.prompt_tokens) || 0;
  const output = Number(u?.completion_tokens) || 0;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: Number(u?.prompt_tokens_details?.cached_tokens) || 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: Number(u?.completion_tokens_details?.reasoning_tokens) || 0 },
    total_tokens: Number(u?.total_tokens) || input + output,
  };
}

/** `completed`, or `incomplete` with the reason the real API gives. */
export function statusOf(finish: string | null | undefined): { status: string; incomplete_details: Json | null } {
  if (finish === 'length') return { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } };
  if (finish === 'content_filter') return { status: 'incomplete', incomplete_details: { reason: 'content_filter' } };
  return { status: 'completed', incomplete_details: null };
}

const orNull = (v: unknown) => (v === undefined ? null : v);

/** The response object around its output: every setting of the request echoed as the real API does. */
export function responseShell(id: string, createdAt: number, model: string, req: ResponsesRequest, store: boolean): ResponseObject {
  const r = req.raw;
  const reasoning = isObj(r.reasoning) ? r.reasoning : {};
  const text = isObj(r.text) ? r.text : {};
  return {
    id,
    object: 'response',
    created_at: createdAt,
    status: 'in_progress',
    background: false,
    error: null,
    incomplete_details: null,
    instructions: orNull(req.instructions),
    max_output_tokens: orNull(req.max_output_tokens),
    max_tool_calls: null,
    model,
    output: [],
    parallel_tool_calls: typeof r.parallel_tool_calls === 'boolean' ? r.parallel_tool_calls : true,
    previous_response_id: orNull(req.previous_response_id),
    reasoning: { effort: orNull(reasoning.effort), summary: orNull(reasoning.summary) },
    service_tier: 'default',
    store,
    temperature: typeof r.temperature === 'number' ? r.temperature : 1,
    text: { ...text, format: isObj(text.format) ? text.format : { type: 'text' } },
    tool_choice: r.tool_choice ?? 'auto',
    tools: Array.isArray(r.tools) ? r.tools : [],
    top_p: typeof r.top_p === 'number' ? r.top_p : 1,
    truncation: 'disabled',
    usage: null,
    user: orNull(r.user),
    metadata: isObj(r.metadata) ? r.metadata : {},
  };
}

export const outputTextPart = (text: string, annotations: unknown[] = []): Json => ({ type: 'output_text', annotations, logprobs: [], text });

/**
 * A chat annotation in the Responses form: a url_citation's members sit on
 * the annotation itself there (`{type, start_index, end_index, url, title}`),
 * under `url_citation` in chat. Any other kind goes as sent.
 */
export function responsesAnnotation(a: unknown): unknown {
  return isObj(a) && a.type === 'url_citation' && isObj(a.url_citation) ? { type: 'url_citation', ...a.url_citation } : a;
}

/**
 * A message's or delta's content as text and reasoning. Mistral's reasoning
 * models answer with a list of chunks rather than a string: `text` chunks,
 * and `thinking` chunks each holding a list of text chunks (or a string). A
 * chunk of any other kind (a reference to a tool's result) has no Responses
 * form and fails the answer rather than vanish from it.
 */
export function contentOf(content: unknown): { text: string; reasoning: string } {
  if (typeof content === 'string') return { text: content, reasoning: '' };
  const out = { text: '', reasoning: '' };
  if (!Array.isArray(content)) return out;
  for (const part of content) {
    if (isObj(part) && part.type === 'text' && typeof part.text === 'string') out.text += part.text;
    else if (isObj(part) && part.type === 'thinking') out.reasoning += thinkingText(part.thinking);
    else throw new GatewayError('upstream_error', `The upstream answered with a ${JSON.stringify(isObj(part) ? part.type : part)} content chunk, which has no Responses form.`);
  }
  return out;
}

function thinkingText(thinking: unknown): string {
  if (typeof thinking === 'string') return thinking;
  if (!Array.isArray(thinking)) return '';
  return thinking.map((t) => (isObj(t) && typeof t.text === 'string' ? t.text : '')).join('');
}

/**
 * A message's or delta's reasoning text: `reasoning_content` (DeepSeek's
 * spelling, and where Anthropic's and Gemini's translators put it), else
 * `reasoning` (OpenRouter's, vLLM's, Ollama's, Groq's). A server that sends
 * both sends the same text twice; one is read.
 */
export function reasoningOf(m: { reasoning_content?: unknown; reasoning?: unknown }): string {
  if (typeof m.reasoning_content === 'string' && m.reasoning_content) return m.reasoning_content;
  return typeof m.reasoning === 'string' ? m.reasoning : '';
}

/**
 * The output items of one chat message: reasoning, then the message, then
 * each function call; or, when the translator noted the order the model wrote
 * them in (answer-order.ts), in that order, as the streamed answer has them.
 * Signed thinking rides on the reasoning item, and a call's extra_content on
 * its item (signed-reasoning.ts).
 */
export function messageToItems(m: AssistantMessage, ids: ItemIds): Item[] {
  const content = contentOf(m.content);
  const text = reasoningOf(m) || content.reasoning;
  const calls = Array.isArray(m.tool_calls) ? m.tool_calls : [];
  const order = orderOf(m, content.text, text, calls.length);
  if (order) return order.map((p) => p.kind === 'reasoning' ? reasoningItem(p.text, p.blocks, ids) : p.kind === 'text' ? messageItem([outputTextPart(p.text)], ids) : callItem(calls[p.index]!, p.index, ids)).filter((i) => i !== undefined);
  const items: Item[] = [];
  const blocks = Array.isArray(m.thinking_blocks) ? m.thinking_blocks : [];
  if (text || blocks.length) items.push(reasoningItem(text, blocks, ids));
  const parts: Json[] = [];
  if (content.text) {
    parts.push(outputTextPart(content.text, Array.isArray(m.annotations) ? m.annotations.map(responsesAnnotation) : []));
  }
  if (typeof m.refusal === 'string' && m.refusal) parts.push({ type: 'refusal', refusal: m.refusal });
  if (parts.length) items.push(messageItem(parts, ids));
  for (const [i, t] of calls.entries()) {
    const item = callItem(t, i, ids);
    if (item) items.push(item);
  }
  return items;
}

/**
 * The noted order, when it still describes the message: texts that join to
 * its content, reasoning to its reasoning, each call once. A message with a
 * refusal or annotations (which a translator noting the order never makes)
 * keeps the fixed order, which has a place for them.
 */
function orderOf(m: AssistantMessage, text: string, reasoning: string, calls: number): readonly AnswerPart[] | undefined {
  const order = answerOrder(m);
  if (!order || (typeof m.refusal === 'string' && m.refusal) || (Array.isArray(m.annotations) && m.annotations.length)) return undefined;
  const joined = (kind: 'text' | 'reasoning') => order.map((p) => (p.kind === kind ? p.text : '')).join('');
  const called = order.flatMap((p) => (p.kind === 'call' ? [p.index] : []));
  const blocks = order.flatMap((p) => (p.kind === 'reasoning' ? p.blocks : []));
  const ok = joined('text') === text && joined('reasoning') === reasoning && called.length === calls && called.every((k, i) => k === i)
    && blocks.length === (Array.isArray(m.thinking_blocks) ? m.thinking_blocks.length : 0);
  return ok ? order : undefined;
}

function reasoningItem(text: string, blocks: unknown[], ids: ItemIds): Item {
  const item: Item = { type: 'reasoning', id: ids.next('rs'), summary: text ? [{ type: 'summary_text', text }] : [] };
  if (blocks.length) item.encrypted_content = sealThinking(blocks);
  return item;
}

const messageItem = (content: Json[], ids: ItemIds): Item => ({ type: 'message', id: ids.next('msg'), status: 'completed', role: 'assistant', content });

function callItem(t: ToolCall, i: number, ids: ItemIds): Item | undefined {
  if (!t?.function) return undefined;
  const item: Item = {
    type: 'function_call', id: ids.next('fc'), call_id: t.id || `call_${ids.hex}_${i}`,
    name: t.function.name, arguments: t.function.arguments ?? '', status: 'completed',
  };
  const extra = extraContentOf(t);
  if (extra) item.extra_content = extra;
  return item;
}

/** Fills `shell` from the completion's first choice (a Responses request never asks for more than one). */
export function completeResponse(shell: ResponseObject, completion: ChatCompletion, usage: Usage, ids: ItemIds): ResponseObject {
  const choice = completion.choices[0];
  shell.output = choice?.message ? messageToItems(choice.message, ids) : [];
  const s = statusOf(choice?.finish_reason);
  shell.status = s.status;
  shell.incomplete_details = s.incomplete_details;
  shell.usage = toResponsesUsage(usage);
  return shell;
}
