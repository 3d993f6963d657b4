import type { ChatCompletion, EmbeddingVector, EmbeddingsResult, Usage } from '../../domain.js';
import { GatewayError } from '../../errors.js';
import { isObj } from '../json-shape.js';

/**
 * The three counts, read defensively; used where the gateway computes from
 * usage (cost, limits, the trace). A count that is not a finite number of
 * tokens at least 0 reads as 0: an upstream's `1e999` made the cost infinite
 * and the Redis limit update fail, and a negative count would refund a budget.
 */
export function readUsage(u: unknown): Usage {
  if (!isObj(u)) return { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  const prompt = tokenCount(u.prompt_tokens);
  const completion = tokenCount(u.completion_tokens);
  // Never less than its parts: a total of 7 beside a prompt of millions made a trace whose tokens and cost disagreed.
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: Math.min(Math.max(tokenCount(u.total_tokens), prompt + completion), MAX_TOKENS) };
}

/**
 * Whether an upstream's usage can be charged: both counts are numbers of
 * tokens. Where one is not (a string, Infinity, missing), the gateway's own
 * estimate is charged, as when no usage came at all, not 0 (a free call).
 */
export function chargeable(u: unknown): u is Usage {
  return isObj(u) && isCount(u.prompt_tokens) && isCount(u.completion_tokens);
}

const isCount = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v) && v >= 0;

/** The trace's integer column: a count above it was priced in full but stored capped, so cost and tokens disagreed. */
const MAX_TOKENS = 2_147_483_647;

function tokenCount(v: unknown): number {
  const n = Number(v);
  return Number.isFinite(n) && n > 0 ? Math.min(Math.trunc(n), MAX_TOKENS) : 0;
}

/**
 * The upstream's completion is already the gateway's model: it is returned as
 * parsed, every field kept, after checking the shape the pipeline reads.
 */
export function chatResponse(body: unknown): ChatCompletion {
  if (!isObj(body) || !Array.isArray(body.choices)) throw new GatewayError('upstream_error', 'The upstream returned no choices.');
  for (const c of body.choices) {
    if (!isObj(c) || !isObj(c.message)) throw new GatewayError('upstream_error', 'The upstream returned a choice without a message.');
    if (!callsReadable(c.message.tool_calls)) throw new GatewayError('upstream_error', 'The upstream returned tool_calls that are not a list of calls.');
  }
  return body as ChatCompletion;
}

/**
 * Whether a message's or a delta's `tool_calls` is absent or a list of
 * objects: the shape every reader of it assumes (the SDKs, moderation, the
 * Responses translation), which a `[null]` or an object would break.
 */
export function callsReadable(calls: unknown): boolean {
  return calls == null || (Array.isArray(calls) && calls.every(isObj));
}

/** Whether a streamed chunk's choices are objects, each with an object delta (or none) and readable tool_calls. */
export function choicesReadable(choices: unknown[]): boolean {
  for (const c of choices) {
    if (!isObj(c)) return false;
    if (c.delta == null) continue;
    if (!isObj(c.delta) || !callsReadable(c.delta.tool_calls)) return false;
  }
  return true;
}

// A batch of 100 × 1536 floats is about 2 MB of text: parsing it and writing it
// back out costs milliseconds, most of an embeddings call. A float answer needs
// neither: each vector's text is cut out, and the rest (indexes, usage) is
// parsed with a numbered placeholder per vector. One expression finds a vector
// and checks that it is numbers only, in one pass over its text: on a 100 × 256
// answer, 0.37 ms against 0.61 for a pass to find and another to check, and
// 1.8 for a loop by character code. A vector that is not plain numbers matches
// nothing, and the answer is then read the ordinary way. JSON's own whitespace
// and number grammar, not \s: the text goes out as it came.
const WS = '[ \\t\\n\\r]*';
const NUMBER = String.raw`-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?`;
const VECTOR_MEMBER = new RegExp(String.raw`"embedding"${WS}:${WS}(\[${WS}(?:${NUMBER}${WS}(?:,${WS}${NUMBER}${WS})*)?\])`, 'g');

/**
 * The embeddings answer from its text, the vectors left as their own JSON text.
 * Anything the shortcut cannot vouch for (a placeholder out of place, a vector
 * that is not plain numbers and so was not cut out) is read the ordinary way instead.
 *
 * Given the `bytes` the text was decoded from, and where they are one byte a
 * character (all ASCII: UTF-8 takes more than one byte for any other
 * character, and a byte it cannot decode is one character too), each vector
 * is the very bytes it came in, a view with no copy, so the answer can go out
 * as bytes (embeddingsBody) instead of a string to encode again.
 */
export function embeddingsText(text: string, bytes?: Buffer): EmbeddingsResult {
  const texts: EmbeddingVector[] = [];
  const asBytes = bytes !== undefined && bytes.length === text.length;
  const skeleton = text.replace(VECTOR_MEMBER, (match: string, vector: string, at: number) => {
    const end = at + match.length;
    return `"embedding":${texts.push(asBytes ? bytes.subarray(end - vector.length, end) : vector) - 1}`;
  });
  let body: unknown;
  try { body = JSON.parse(skeleton); } catch { body = undefined; }
  const data = isObj(body) && Array.isArray(body.data) ? body.data : undefined;
  const placed = data?.length === texts.length && data.every((it, i) => isObj(it) && it.embedding === i);
  if (!placed) return embeddingsResponse(JSON.parse(text));
  return result(body as Record<string, unknown>, (it) => texts[it.embedding as number]!);
}

export function embeddingsResponse(body: unknown): EmbeddingsResult {
  if (!isObj(body) || !Array.isArray(body.data)) throw new GatewayError('upstream_error', 'The upstream returned no embeddings.');
  return result(body, (it) => {
    if (!Array.isArray(it.embedding)) throw new GatewayError('upstream_error', 'An embedding item has no float vector.');
    return it.embedding as number[];
  });
}

/** The answer's members the gateway writes itself. */
const ANSWER_OWN = new Set(['object', 'data', 'model', 'usage']);
/** An item's members the gateway writes itself. */
const ITEM_OWN = new Set(['object', 'index', 'embedding']);

/** `from`'s members not in `own`, in a null-prototype object (an upstream's "__proto__" member is a member like any other); undefined if none. */
function othersThan(own: ReadonlySet<string>, from: Record<string, unknown>): Record<string, unknown> | undefined {
  let out: Record<string, unknown> | undefined;
  for (const key of Object.keys(from)) {
    if (!own.has(key)) (out ??= Object.create(null) as Record<string, unknown>)[key] = from[key];
  }
  return out;
}

/**
 * The items in input order. OpenAI documents `index` on each item, so that
 * order is read from it rather than trusted to the array. Indexes that are not
 * 0 to N-1, each once (two items numbered 0, or a 7 in a batch of two), leave
 * some input without its vector: that is a short batch however many items
 * came, and fails the call rather than hand one input another's vector. A
 * server that numbers no item keeps the array's order.
 */
function inputOrder(data: unknown[]): unknown[] {
  if (!data.some((it) => isObj(it) && it.index !== undefined)) return data;
  const out: unknown[] = new Array(data.length);
  for (const it of data) {
    const at = isObj(it) ? it.index : undefined;
    if (typeof at !== 'number' || !Number.isInteger(at) || at < 0 || at >= data.length || out[at] !== undefined) {
      throw new GatewayError('embeddings_incomplete', `The upstream's embeddings are not numbered 0 to ${data.length - 1}, one per input (index ${JSON.stringify(at)}).`);
    }
    out[at] = it;
  }
  return out;
}

function result(body: Record<string, unknown>, vector: (item: Record<string, unknown>) => EmbeddingVector): EmbeddingsResult {
  const items = inputOrder(body.data as unknown[]);
  const vectors = items.map((it) => {
    if (!isObj(it)) throw new GatewayError('upstream_error', 'An embedding item has no float vector.');
    return vector(it);
  });
  const usage = readUsage(body.usage);
  const out: EmbeddingsResult = { vectors, usage: { prompt_tokens: usage.prompt_tokens, total_tokens: usage.total_tokens || usage.prompt_tokens } };
  const extra = othersThan(ANSWER_OWN, body);
  if (extra) out.extra = extra;
  const itemExtra = items.map((it) => othersThan(ITEM_OWN, it as Record<string, unknown>));
  if (itemExtra.some((e) => e !== undefined)) out.itemExtra = itemExtra;
  if (isObj(body.usage)) out.usageExtra = Object.assign(Object.create(null) as Record<string, unknown>, body.usage);
  return out;
}

