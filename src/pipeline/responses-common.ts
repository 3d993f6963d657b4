// What the native and translated Responses paths share: the prepared request,
// storing the finished response, and moderation of a response's output.
import type { StreamEvent, Usage } from '../domain.js';
import { GatewayError } from '../errors.js';
import { chargeable } from '../providers/openai-compatible/response.js';
import type { Resolution } from '../routing/resolve-chat.js';
import type { StoredResponse } from '../responses/store.js';
import { isObj, type Item, type Json, type ResponseObject, type ResponsesRequest } from '../responses/types.js';
import type { OutputMode } from '../policy/types.js';
import { shownTexts } from '../policy/shown-texts.js';
import type { RequestContext } from './request-context.js';
import type { ResolvedInput } from './responses-conversation.js';
import type { Services } from './services.js';

/** A validated, routed and guarded Responses request. */
export interface Prepared {
  req: ResponsesRequest;
  /** The input items and instructions as the upstream may see them (after DLP). */
  items: Item[];
  instructions: string | undefined;
  /** The stored conversation behind previous_response_id, oldest first, when it was found (the paths check again when not). */
  chain: StoredResponse[] | undefined;
  /** The chain's items as DLP left them, when it changed any of them (responses.ts): what is replayed upstream. */
  history?: Item[] | undefined;
  /** The input with its item_references resolved, before DLP, and where each came from (responses-conversation.ts). */
  resolved: ResolvedInput;
  route: Resolution;
  org: string;
  mode: OutputMode;
  wantBlock: boolean;
  /** Whether this response is stored: the caller's `store` and both switches. */
  store: boolean;
}

/**
 * Once an upstream has accepted a stream, the caller's text and the stored
 * conversation it was built from are not read again: what the stream's end
 * reads is the items it stores, the route and the switches. A stream holds
 * its Prepared for minutes, so they are let go (chat-stream.ts says why this
 * matters).
 */
export function releaseRequest(p: Prepared): void {
  p.req.text = undefined;
  p.chain = undefined;
  p.history = undefined;
}

export function storingAllowed(svc: Services, org: string, asked: boolean): boolean {
  return asked && svc.config.responses.store && (svc.config.organizations.get(org)?.responses?.store ?? true);
}

/**
 * Before the reply (or the event that completes a stream) goes out: a response
 * about to be stored is marked pending, so that a chained request on another
 * instance waits for its row (store.ts). One Redis SET; Postgres is not awaited.
 */
export async function markStoring(svc: Services, p: Prepared, response: Json): Promise<void> {
  if (!p.store || response.status === 'failed' || typeof response.id !== 'string') return;
  await svc.responses.markPending(p.org, response.id);
}

/** Stores the response after the reply (never awaited); the gateway block is the caller's, not the conversation's. */
export function saveResponse(svc: Services, ctx: RequestContext, p: Prepared, response: ResponseObject, native: boolean): void {
  if (!p.store || response.status === 'failed') return;
  const { gateway: _gateway, ...kept } = response;
  svc.responses.save({
    id: response.id, organization_id: p.org, provider: p.route.entry.provider, model: p.route.entry.id, native,
    // Where the upstream keeps its own copy, which a DELETE must reach (responses-held-copy.ts).
    upstream_base_url: native ? svc.config.providers.get(p.route.entry.provider)?.base_url : undefined,
    previous_response_id: p.req.previous_response_id, input: p.items, response: kept as ResponseObject, created_at: ctx.startedEpoch,
  });
}

/** The texts of a message's content, or a reasoning item's summary or content: each part's text or refusal. */
function partTexts(parts: unknown, texts: string[]): void {
  if (!Array.isArray(parts)) return;
  for (const p of parts) {
    if (isObj(p) && typeof p.text === 'string') texts.push(p.text);
    if (isObj(p) && typeof p.refusal === 'string') texts.push(p.refusal);
  }
}

/** A response's output text, for an estimate of its tokens: message text and refusals, reasoning summaries and text, function-call arguments. */
export function outputTexts(output: unknown): string[] {
  const texts: string[] = [];
  if (!Array.isArray(output)) return texts;
  for (const item of output) {
    if (!isObj(item)) continue;
    if (item.type === 'function_call' && typeof item.arguments === 'string') texts.push(item.arguments);
    if (item.type === 'message') partTexts(item.content, texts);
    if (item.type === 'reasoning') {
      partTexts(item.summary, texts);
      partTexts(item.content, texts);
    }
  }
  return texts;
}

/** The events whose `delta` is text a reader is shown, a piece at a time. */
export const TEXT_DELTAS: ReadonlySet<string> = new Set([
  'response.output_text.delta', 'response.refusal.delta', 'response.function_call_arguments.delta',
  'response.reasoning_summary_text.delta', 'response.reasoning_text.delta',
]);
/** Events whose `delta` is bytes, not text (base64 audio): read as text, its random letters could match a term by chance. */
const BYTES_DELTAS: ReadonlySet<string> = new Set(['response.audio.delta']);
/** An event's members that place it in the response, or that streamedTexts reads apart (its delta, item, part, response). */
const EVENT_OWN: ReadonlySet<string> = new Set([
  'type', 'sequence_number', 'item_id', 'output_index', 'content_index', 'summary_index', 'annotation_index',
  'delta', 'item', 'part', 'response', 'logprobs', 'obfuscation', 'partial_image_b64',
]);

/**
 * Every output text a stream of Responses events would disclose, whatever
 * event ends it (`response.failed` and `error` carry no whole output), and
 * whatever kind of output it is, known or not (shown-texts.ts): every delta
 * joined per event kind and part, what `.done` and other events carry, and
 * the output of any response object an event holds.
 */
export function streamedTexts(events: readonly StreamEvent[]): string[] {
  const joined = new Map<string, string>();
  const texts: string[] = [];
  const answer = new OutputText();
  for (const ev of events) {
    if (ev.type !== 'event' || ev.name === 'error') continue;
    const d = ev.data;
    if (typeof d.delta === 'string') {
      if (BYTES_DELTAS.has(ev.name)) continue;
      // A reasoning summary's parts are numbered by summary_index, a message's by content_index. The openai
      // SDK joins a part's deltas by output_index, a reader keyed on items by item_id: both are read.
      const part = String(d.content_index ?? d.summary_index ?? '');
      join(joined, `${ev.name}/o${String(d.output_index)}/${part}`, d.delta);
      join(joined, `${ev.name}/i${String(d.item_id)}/${part}`, d.delta);
      if (ev.name === 'response.output_text.delta') answer.add(d.output_index, d.content_index, d.delta);
      continue;
    }
    // A delta that is not a string is no piece a client joins; it is read whole.
    if (d.delta != null && !BYTES_DELTAS.has(ev.name)) shownTexts(d.delta, texts);
    for (const k of Object.keys(d)) if (!EVENT_OWN.has(k)) shownTexts(d[k], texts);
    if (isObj(d.part)) shownTexts(d.part, texts);
    if (isObj(d.item)) shownTexts(d.item, texts);
    if (isObj(d.response)) responseTexts(d.response, texts);
  }
  answer.texts(texts);
  return [...new Set([...joined.values(), ...texts])];
}

/**
 * A stream's output_text deltas, every part of every message item, joined
 * with nothing between them, as a reader shows the answer: in the order they
 * came (a client that prints deltas) and in the order of the output (the
 * openai SDK's `output_text`, which joins the parts of every message item
 * with ''). Each part is read joined by itself too (streamedTexts), so with
 * one part there is nothing more to read.
 */
class OutputText {
  private arrived = '';
  private readonly parts = new Map<string, { item: number; part: number; text: string }>();

  add(item: unknown, part: unknown, delta: string): void {
    this.arrived += delta;
    const key = `${String(item)}/${String(part)}`;
    const at = this.parts.get(key);
    if (at) at.text += delta;
    else this.parts.set(key, { item: Number(item), part: Number(part), text: delta });
  }

  texts(out: string[]): void {
    if (this.parts.size < 2) return;
    out.push(this.arrived);
    const ordered = [...this.parts.values()].sort((a, b) => a.item - b.item || a.part - b.part).map((p) => p.text).join('');
    if (ordered !== this.arrived) out.push(ordered);
  }
}

function join(joined: Map<string, string>, key: string, piece: string): void {
  joined.set(key, (joined.get(key) ?? '') + piece);
}

/**
 * A response object's members that are not its output: what names, counts or
 * settles it, and the echo of the request (its instructions, tools, metadata,
 * text settings), which is the caller's own and would block an answer for
 * what the caller wrote. Every other member is read with the output, deny by
 * default: an `output_text`, a provider's member.
 */
const RESPONSE_OWN: ReadonlySet<string> = new Set([
  'id', 'object', 'created_at', 'completed_at', 'status', 'background', 'billing', 'conversation', 'error', 'incomplete_details',
  'instructions', 'max_output_tokens', 'max_tool_calls', 'metadata', 'model', 'output', 'parallel_tool_calls', 'previous_response_id',
  'prompt', 'prompt_cache_key', 'prompt_cache_retention', 'reasoning', 'safety_identifier', 'service_tier', 'store', 'temperature',
  'text', 'tool_choice', 'tools', 'top_logprobs', 'top_p', 'truncation', 'usage', 'user',
]);

/**
 * The texts of a response object a reader is shown: its output, and its
 * members beside it but the request's echo; and the output_text of all its
 * message items joined, as the SDKs show it.
 */
function responseTexts(response: Json, out: string[]): string[] {
  shownTexts(response.output, out);
  const joined = joinedOutputText(response.output);
  if (joined !== undefined) out.push(joined);
  for (const k of Object.keys(response)) if (!RESPONSE_OWN.has(k)) shownTexts(response[k], out);
  return out;
}

/**
 * The text of every output_text part of every message item, joined with
 * nothing between them: the `output_text` the openai SDK gives a response
 * (ResponsesParser's addOutputText), so "How to make a b" and "omb", as two
 * parts or two items, read "How to make a bomb" (until 2026-11-29 each was
 * read by itself, joined with a line break, and passed). Undefined with one
 * part at most, which is read already.
 */
function joinedOutputText(output: unknown): string | undefined {
  if (!Array.isArray(output)) return undefined;
  const texts: string[] = [];
  for (const item of output) {
    if (!isObj(item) || item.type !== 'message' || !Array.isArray(item.content)) continue;
    for (const part of item.content) if (isObj(part) && part.type === 'output_text' && typeof part.text === 'string') texts.push(part.text);
  }
  return texts.length > 1 ? texts.join('') : undefined;
}

/** Buffered moderation over texts of an output. */
export async function moderateTexts(svc: Services, org: string, texts: string[]): Promise<void> {
  if (!texts.length) return;
  const verdict = await svc.policy!.moderate(org, texts.join('\n'));
  if (verdict.blocked) throw new GatewayError('content_blocked', `The output was blocked by moderation (${verdict.category}).`);
}

/** Buffered moderation over a whole response: every text of every item, known kinds or not, and its members beside them. */
export const moderateOutput = (svc: Services, org: string, response: Json): Promise<void> =>
  moderateTexts(svc, org, responseTexts(response, []));

/** A native response's usage in chat terms, for the trace and its cost. */
export function chatUsageOf(usage: unknown): Usage | undefined {
  if (!isObj(usage)) return undefined;
  const counts = { prompt_tokens: usage.input_tokens, completion_tokens: usage.output_tokens };
  // Counts that are not numbers are no usage: the estimate is charged, not 0 (chargeable()).
  if (!chargeable(counts)) return undefined;
  return { ...counts, total_tokens: Number(usage.total_tokens) || counts.prompt_tokens + counts.completion_tokens };
}

