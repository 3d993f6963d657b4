// How translating adapters read a message's `content`: a string, or parts.
// Text parts (and an assistant's refusal parts, which are its own earlier
// words) become the provider's text blocks; any other part goes to `other`,
// and a part nobody takes is a 400 naming its type.
import type { ChatMessage, ContentPart } from '../domain.js';
import { GatewayError } from '../errors.js';

type Json = Record<string, any>;

const refuse = (param: string, message: string): never => {
  throw new GatewayError('invalid_request', message, { param });
};

export function contentBlocks(
  m: ChatMessage, i: number, provider: string,
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
      if (t !== '') out.push(text(t as string));
      return;
    }
    const block = other?.(p, at);
    if (!block) refuse(`${at}.type`, `Content parts of type ${JSON.stringify(p?.type)} are not supported in ${m.role} messages for ${provider} models.`);
    out.push(block!);
  });
  return out;
}
