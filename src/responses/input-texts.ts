// Every text of a Responses request that the upstream will read and that can
// carry a caller's data: the instructions, message text parts (input_text,
// output_text, refusal), function-call arguments, function-call outputs
// (tool results), and a reasoning item's summary and the thinking sluice
// sealed in it (signed-reasoning.ts), which goes back to an Anthropic upstream. One walker serves both directions, as message-texts.ts
// does for chat, so collecting and replacing can never disagree on the order.
import { mapArguments, mapTextParts, type MapText } from '../policy/text-walk.js';
import { mapSealedThinking } from './signed-reasoning.js';
import type { Item } from './types.js';

const TEXT_PARTS = new Set(['input_text', 'output_text', 'text', 'summary_text']);

const responsesPartKey = (p: Record<string, unknown>): string | undefined =>
  (p.type === 'refusal' ? 'refusal' : TEXT_PARTS.has(p.type as string) ? 'text' : undefined);

/** A string or a list of text parts; anything else is returned as is. */
function mapContent(content: unknown, f: MapText): unknown {
  if (typeof content === 'string') return f(content);
  if (Array.isArray(content)) return mapTextParts(content, responsesPartKey, f);
  return content;
}

function mapItem(item: Item, f: MapText): Item {
  switch (item.type) {
    case 'message': {
      const c = mapContent(item.content, f);
      return c === item.content ? item : { ...item, content: c };
    }
    case 'function_call': {
      if (typeof item.arguments !== 'string') return item;
      // JSON text, as a chat tool call's: it must still parse after DLP.
      const a = mapArguments(item.arguments, f);
      return a === item.arguments ? item : { ...item, arguments: a };
    }
    case 'function_call_output': {
      const o = mapContent(item.output, f);
      return o === item.output ? item : { ...item, output: o };
    }
    case 'reasoning': {
      const summary = mapContent(item.summary, f);
      const sealed = mapSealedThinking(item, f);
      return summary === item.summary ? sealed : { ...sealed, summary };
    }
    default:
      return item;
  }
}

export interface GuardableInput { instructions: string | undefined; items: readonly Item[] }

/** The input with `f` applied to each text; objects are copied only where a text changed, never mutated. */
export function mapInputTexts(input: GuardableInput, f: MapText): { instructions: string | undefined; items: Item[] } {
  const instructions = input.instructions === undefined ? undefined : f(input.instructions);
  return { instructions, items: input.items.map((it) => mapItem(it, f)) };
}

export function collectInputTexts(input: GuardableInput): string[] {
  const texts: string[] = [];
  mapInputTexts(input, (t) => { texts.push(t); return t; });
  return texts;
}

export function replaceInputTexts(input: GuardableInput, texts: readonly string[]): { instructions: string | undefined; items: Item[] } {
  let i = 0;
  return mapInputTexts(input, () => texts[i++]!);
}
