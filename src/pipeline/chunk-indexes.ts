// Where a streamed chunk's pieces belong. Clients merge a choice's deltas by
// the choice's `index`, and a tool call's fragments by the call's own, so
// moderation must join pieces by the same numbers or it reads texts no client
// will show. A `"0"` beside a `0`, or a `-1`, would be two places to a Map or
// an array here and one to the openai SDK, and a term split across them would
// pass unread. Under moderation such a chunk fails the stream instead.
import type { ChatChunk } from '../domain.js';
import { GatewayError } from '../errors.js';
import { isObj } from '../responses/types.js';

/** Far above any real answer's choices or calls, and low enough that an array indexed by it stays small. */
export const MAX_INDEX = 4095;

const isIndex = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= MAX_INDEX;

/**
 * A tool call delta's place: its `index`, or its position in the chunk when it
 * has none (Gemini's OpenAI-compatible endpoint sends none, a call per chunk).
 * Under moderation checkIndexes has refused any other index; for the payload
 * archive alone an index out of range takes the position too, so that no
 * upstream can make an array of a billion holes.
 */
export function callIndex(t: unknown, position: number): number {
  return isObj(t) && isIndex(t.index) ? t.index : position;
}

/**
 * Throws upstream_error unless every choice has a whole-number index below
 * `choices` (the request's `n`) and every tool call one or none. A choice the
 * request did not ask for would be merged into the first by a client that
 * reads each chunk's first choice whatever its index (LangChain's ChatOpenAI,
 * the AI SDK), so "make a " in choice 0 and "bomb" in choice 1 reached it as
 * one text past moderation (until 2026-11-29).
 */
export function checkIndexes(chunk: ChatChunk, choices = MAX_INDEX + 1): void {
  for (const c of chunk.choices) {
    if (!isObj(c) || !isIndex(c.index)) throw malformed('a choice without a whole-number index');
    if (c.index >= choices) {
      throw new GatewayError('upstream_error', `The upstream sent a stream chunk for choice ${c.index}, beyond the ${choices} the request asked for.`);
    }
    const calls = isObj(c.delta) ? c.delta.tool_calls : undefined;
    if (calls === undefined || calls === null) continue;
    if (!Array.isArray(calls)) throw malformed('tool_calls that are not a list');
    for (const t of calls) if (!isObj(t) || (t.index !== undefined && !isIndex(t.index))) throw malformed('a tool call whose index is not a whole number');
  }
}

function malformed(what: string): GatewayError {
  return new GatewayError('upstream_error', `The upstream sent a stream chunk with ${what} (0 to ${MAX_INDEX}), which clients would merge differently than moderation reads it.`);
}
