// Top log probabilities under output moderation. A token's own log
// probability repeats the answer's text, token by token; its `top_logprobs`
// are the tokens the model ranked beside it: text the answer does not hold.
// No reading of them is sound: a reader may join any alternative with the
// tokens around it, so the answer's "Make a" and " bomb" ranked second after
// it spell what a rule blocks, and the alternatives of every position make a
// lattice of texts, not one text a rule can read. So a moderated organisation
// cannot ask for them (a 400 naming `top_logprobs`), and those an upstream
// sends unasked are emptied before the answer goes out. Until 2026-11-29 they
// went out unread.
import type { ChatChunk, ChunkChoice, ChatCompletion } from '../domain.js';
import { GatewayError } from '../errors.js';
import { isObj, type Json } from '../responses/types.js';
import type { OutputMode } from '../policy/types.js';

/** Refuses a request for alternatives (`top_logprobs` but absent, null or 0) under output moderation. */
export function refuseAlternatives(mode: OutputMode, raw: Record<string, unknown>): void {
  if (mode === 'off' || raw.top_logprobs == null || raw.top_logprobs === 0) return;
  throw new GatewayError('invalid_request', 'top_logprobs cannot be returned for this organisation: its output moderation cannot read the alternatives to a token, text the answer does not hold. Send top_logprobs: 0, or none.', { param: 'top_logprobs' });
}

/** Whether a `top_logprobs` member says nothing: absent, null or an empty list. */
const saysNothing = (v: unknown): boolean => v == null || (Array.isArray(v) && v.length === 0);

/**
 * Visits every `top_logprobs` member in `value` that says something; stops
 * at the first when `visit` returns true. A loop over a stack: an upstream's
 * answer may nest deeper than the call stack goes.
 */
function eachAlternatives(value: unknown, visit: (owner: Record<string, unknown>) => boolean): void {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (Array.isArray(v)) {
      for (const x of v) if (x !== null && typeof x === 'object') stack.push(x);
    } else if (isObj(v)) {
      for (const k of Object.keys(v)) {
        const m = v[k];
        if (k === 'top_logprobs') {
          if (!saysNothing(m) && visit(v)) return;
        } else if (m !== null && typeof m === 'object') {
          stack.push(m);
        }
      }
    }
  }
}

/** `logprobs` with every token's alternatives emptied, as a copy; the same value when it has none. */
export function withoutAlternatives(logprobs: unknown): unknown {
  let found = false;
  eachAlternatives(logprobs, () => (found = true));
  if (!found) return logprobs;
  const copy = structuredClone(logprobs);
  eachAlternatives(copy, (owner) => {
    owner.top_logprobs = [];
    return false;
  });
  return copy;
}

/** A chat answer's choices with their logprobs' alternatives emptied, in place; whether any had some. */
export function dropChoiceAlternatives(choices: ChatCompletion['choices']): boolean {
  let dropped = false;
  for (const c of choices) {
    if (c?.logprobs == null) continue;
    const kept = withoutAlternatives(c.logprobs);
    if (kept !== c.logprobs) {
      c.logprobs = kept;
      dropped = true;
    }
  }
  return dropped;
}

/** A stream chunk with its choices' alternatives emptied, as a copy; the same chunk when it has none. */
export function chunkWithoutAlternatives(chunk: ChatChunk): ChatChunk {
  let choices: ChunkChoice[] | undefined;
  chunk.choices.forEach((c, i) => {
    if (c?.logprobs == null) return;
    const kept = withoutAlternatives(c.logprobs);
    if (kept !== c.logprobs) (choices ??= chunk.choices.slice())[i] = { ...c, logprobs: kept };
  });
  return choices ? { ...chunk, choices } : chunk;
}

/** An object's (a part's, a text event's) logprobs without alternatives, in place; whether it had some. */
function dropPartAlternatives(part: unknown): boolean {
  if (!isObj(part) || part.logprobs == null) return false;
  const kept = withoutAlternatives(part.logprobs);
  if (kept === part.logprobs) return false;
  part.logprobs = kept;
  return true;
}

/** The parts of each output item (an output_text's logprobs), in place; whether any had alternatives. */
export function dropOutputAlternatives(output: unknown): boolean {
  if (!Array.isArray(output)) return false;
  let dropped = false;
  for (const item of output) {
    if (!isObj(item) || !Array.isArray(item.content)) continue;
    for (const part of item.content) if (dropPartAlternatives(part)) dropped = true;
  }
  return dropped;
}

/**
 * A native Responses event, in place: a text event's logprobs
 * (`response.output_text.delta` and `.done`), a content part's, an output
 * item's parts and a response object's output; whether any had alternatives.
 */
export function dropEventAlternatives(data: Json): boolean {
  let dropped = dropPartAlternatives(data);
  if (dropPartAlternatives(data.part)) dropped = true;
  if (isObj(data.item) && dropOutputAlternatives([data.item])) dropped = true;
  if (isObj(data.response) && dropOutputAlternatives(data.response.output)) dropped = true;
  return dropped;
}
