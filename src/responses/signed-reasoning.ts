// What a translated provider needs back to continue its own reasoning, carried
// through Responses items, which have no field for it. Anthropic signs its
// thinking blocks and refuses a tool loop with thinking on unless the turn
// that made the call is sent back with them; Gemini signs a function call
// (Google's OpenAI-compatible shape: `extra_content.google.thought_signature`)
// and loses its reasoning state, or refuses the call, without it.
//
// - The thinking blocks go in the reasoning item's `encrypted_content`, the
//   member OpenAI itself uses for reasoning a stateless caller sends back. It
//   is opaque to the caller as OpenAI's is, but not encrypted: the blocks are
//   the model's own output, which the chat API hands the caller in the clear.
// - A tool call's `extra_content` stays on its function_call item, as is.
//
// Both come back the way the caller's SDK returns output items: an item list
// replayed as input, an item_reference, or previous_response_id.
import { mapJson, type MapText } from '../policy/text-walk.js';
import { isObj, type Item } from './types.js';

/** Marks our own encrypted_content: an OpenAI one (a chain begun on a native upstream) is not ours to read. */
const PREFIX = 'sluice.thinking.v1:';

export function sealThinking(blocks: readonly unknown[]): string {
  return PREFIX + Buffer.from(JSON.stringify(blocks)).toString('base64');
}

/** The thinking blocks a reasoning item carries, or undefined when it carries none of ours. */
export function thinkingOf(item: Item): unknown[] | undefined {
  const sealed = item.encrypted_content;
  if (typeof sealed !== 'string' || !sealed.startsWith(PREFIX)) return undefined;
  let blocks: unknown;
  try {
    blocks = JSON.parse(Buffer.from(sealed.slice(PREFIX.length), 'base64').toString('utf8'));
  } catch {
    return undefined;
  }
  // The Anthropic adapter checks each block (and a forged signature is Anthropic's to refuse).
  return Array.isArray(blocks) && blocks.length > 0 ? blocks : undefined;
}

/** A tool call's extra_content, when it has one worth carrying. */
export function extraContentOf(call: Record<string, unknown>): Record<string, unknown> | undefined {
  return isObj(call.extra_content) ? call.extra_content : undefined;
}

/**
 * The reasoning item with `f` applied to every string of the thinking sealed
 * in it (input guarding, as a chat turn's thinking_blocks are): the item
 * itself when nothing changed, undefined when it carries none of ours.
 */
export function mapSealedThinking(item: Item, f: MapText): Item | undefined {
  const blocks = thinkingOf(item);
  if (!blocks) return undefined;
  const mapped = mapJson(blocks, f) as unknown[];
  return mapped === blocks ? item : { ...item, encrypted_content: sealThinking(mapped) };
}
