// How translating adapters read a message's `content`: a string, or parts.
// Text parts (and an assistant's refusal parts, which are its own earlier
// words) become the provider's text blocks; any other part goes to `other`,
// and a part nobody takes is a 400 naming its type. A part's members besides
// its type and its payload are refused by name, as a message's are, with one
// exception: `cache_control`, the prompt-caching mark OpenAI-shaped clients
// (LiteLLM's and OpenRouter's convention) put on a part for Anthropic.
import type { ChatMessage, ContentPart } from '../domain.js';
import { GatewayError } from '../errors.js';
import { isObj } from './json-shape.js';

type Json = Record<string, any>;

const refuse = (param: string, message: string): never => {
  throw new GatewayError('invalid_request', message, { param });
};

/** Each part type's payload member: in OpenAI's shape, the only other member a part has. */
const PAYLOAD: ReadonlyMap<string, string> = new Map([
  ['text', 'text'], ['refusal', 'refusal'], ['image_url', 'image_url'], ['input_audio', 'input_audio'], ['file', 'file'],
]);

/**
 * What an adapter does with a `cache_control` mark (on a part, or a tool):
 * 'send' puts it on the block made, as Anthropic reads it; 'drop' leaves it
 * out, for a provider that caches repeated prefixes by itself (Gemini), where
 * the mark changes a price and never an answer.
 */
export type CacheControl = 'send' | 'drop';

/** The caller's cache_control, checked: Anthropic's `{type: "ephemeral"}`, with whatever else it carries (a `ttl`) as sent. */
export function cacheMark(value: unknown, at: string): Json {
  if (!isObj(value) || value.type !== 'ephemeral') return refuse(at, `${at} must be {"type": "ephemeral"} (with an optional ttl).`);
  return value;
}

/** `block` with the part's cache_control set or dropped; any other member beside the type and payload is refused. */
function partMembers(p: ContentPart, at: string, block: Json, provider: string, cache: CacheControl): Json {
  const payload = PAYLOAD.get(p.type);
  for (const key of Object.keys(p)) {
    if (key === 'type' || key === payload) continue;
    if (key !== 'cache_control') refuse(`${at}.${key}`, `${at}.${key} is not supported for ${provider} models.`);
    const mark = cacheMark(p.cache_control, `${at}.cache_control`);
    if (cache === 'send') block.cache_control = mark;
  }
  return block;
}

export function contentBlocks(
  m: ChatMessage, i: number, provider: string, cache: CacheControl,
  text: (t: string) => Json,
  other?: (p: ContentPart, at: string) => Json | undefined,
): Json[] {
  const c = m.content;
  if (typeof c === 'string') return c === '' ? [] : [text(c)];
  if (c == null) return [];
  if (!Array.isArray(c)) return refuse(`messages.${i}.content`, `messages.${i}.content must be a string or an array of parts.`);
  const out: Json[] = [];
  c.forEach((p: ContentPart, j) => {
    const at = `messages.${i}.content.${j}`;
    if (p?.type === 'text' || (p?.type === 'refusal' && m.role === 'assistant')) {
      const t = p.type === 'text' ? p.text : p.refusal;
      if (typeof t !== 'string') refuse(`${at}.${p.type}`, `${at}.${p.type} must be a string.`);
      const block = partMembers(p, at, text(t as string), provider, cache);
      // An empty text is no block, but a mark on it is still checked.
      if (t !== '') out.push(block);
      return;
    }
    const block = other?.(p, at);
    if (!block) refuse(`${at}.type`, `Content parts of type ${JSON.stringify(p?.type)} are not supported in ${m.role} messages for ${provider} models.`);
    out.push(partMembers(p, at, block!, provider, cache));
  });
  return out;
}
