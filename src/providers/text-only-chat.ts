// How the Anthropic and Gemini adapters read an OpenAI chat request: both take
// text only, hold system prompts apart from the conversation, and want user and
// assistant turns to alternate. Errors name the provider so the caller knows
// which model refused.
import type { ChatMessage, ChatRequest } from '../domain.js';
import { GatewayError } from '../errors.js';

/**
 * Fields whose loss would silently change the answer's meaning are refused (each
 * adapter drops the tuning knobs it has no equivalent for; the README's provider
 * table lists both). `formats` are the response_format types the provider honours.
 */
export function rejectUnsupported(raw: Record<string, unknown>, provider: string, formats: readonly unknown[] = ['text']): void {
  const refuse = (param: string, what: string) => {
    throw new GatewayError('invalid_request', `${what} is not supported for ${provider} models.`, { param });
  };
  if (typeof raw.n === 'number' && raw.n > 1) refuse('n', 'More than one choice (n > 1)');
  if (Array.isArray(raw.tools) && raw.tools.length > 0) refuse('tools', 'Tool calling');
  if (Array.isArray(raw.functions) && raw.functions.length > 0) refuse('functions', 'Function calling');
  if (raw.logprobs === true) refuse('logprobs', 'logprobs');
  if (raw.audio != null) refuse('audio', 'Audio output');
  const format = (raw.response_format as { type?: unknown } | undefined)?.type;
  if (format !== undefined && !formats.includes(format)) refuse('response_format', `response_format "${String(format)}"`);
}

/** The text of a message: a string, or the text parts of an array; empty text is left out. */
function textsOf(content: ChatMessage['content'], provider: string): string[] {
  if (typeof content === 'string') return content === '' ? [] : [content];
  if (content == null) return [];
  const texts: string[] = [];
  for (const part of content) {
    if (part.type !== 'text') {
      throw new GatewayError('invalid_request', `Content parts of type "${part.type}" are not supported for ${provider} models.`, { param: 'messages' });
    }
    if (typeof part.text === 'string' && part.text !== '') texts.push(part.text);
  }
  return texts;
}

export interface TextTurn { role: 'user' | 'assistant'; texts: string[] }

/**
 * System and developer messages become `system`; the rest become turns, with
 * consecutive messages of one role merged. Empty messages are left out: they
 * carry nothing to translate, and Anthropic refuses empty turns.
 */
export function textTurns(req: ChatRequest, provider: string): { system: string[]; turns: TextTurn[] } {
  const system: string[] = [];
  const turns: TextTurn[] = [];
  for (const m of req.messages) {
    if (m.role !== 'system' && m.role !== 'developer' && m.role !== 'user' && m.role !== 'assistant') {
      throw new GatewayError('invalid_request', `Messages with role "${m.role}" are not supported for ${provider} models.`, { param: 'messages' });
    }
    const texts = textsOf(m.content, provider);
    if (m.role === 'system' || m.role === 'developer') { system.push(...texts); continue; }
    if (texts.length === 0) continue;
    const last = turns[turns.length - 1];
    if (last && last.role === m.role) last.texts.push(...texts);
    else turns.push({ role: m.role, texts });
  }
  if (turns.length === 0) {
    throw new GatewayError('invalid_request', 'At least one user or assistant message is required.', { param: 'messages' });
  }
  return { system, turns };
}
