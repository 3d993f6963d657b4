// The order of a translated answer's parts. A chat message holds its text as
// one string and its tool calls in a list beside it, so an answer that
// interleaves them (Anthropic: text, tool_use, text; Gemini: text, a
// functionCall, text) loses the order the model wrote them in. A stream keeps
// it, since the chunks come in that order; so that a Responses answer built
// from the JSON completion has its output items in the same order as the
// streamed one, the translator notes the order here, beside the message rather
// than on it, where a chat caller would read a member OpenAI never sends.
import type { AssistantMessage } from '../domain.js';

export type AnswerPart =
  /** Reasoning text and the signed blocks it came in (Anthropic's thinking), read as one reasoning item. */
  | { kind: 'reasoning'; text: string; blocks: unknown[] }
  | { kind: 'text'; text: string }
  /** The message's tool call at `index` of its tool_calls. */
  | { kind: 'call'; index: number };

const ORDER = new WeakMap<AssistantMessage, AnswerPart[]>();

/** Adds a part, joined to the one before it when both are text or both reasoning, as a stream joins their deltas. */
export function addPart(parts: AnswerPart[], part: AnswerPart): void {
  const last = parts.at(-1);
  if (last?.kind === 'text' && part.kind === 'text') last.text += part.text;
  else if (last?.kind === 'reasoning' && part.kind === 'reasoning') { last.text += part.text; last.blocks.push(...part.blocks); }
  else if (part.kind !== 'text' || part.text) parts.push(part);
}

export function noteOrder(message: AssistantMessage, parts: AnswerPart[]): void {
  ORDER.set(message, parts);
}

export function answerOrder(message: AssistantMessage): readonly AnswerPart[] | undefined {
  return ORDER.get(message);
}
