// OpenAI chat body -> Anthropic Messages API body (POST {base_url}/messages).
// Anthropic has no "system" role: system (and "developer") messages move to the
// top-level `system` field. Consecutive turns of one role are merged, since the
// API has historically required user/assistant alternation.
import type { ChatMessage, ChatRequest, UpstreamRequest, UpstreamTarget } from '../../domain.js';
import { GatewayError } from '../../errors.js';
import { joinUrl } from '../url.js';

export const ANTHROPIC_VERSION = '2023-06-01';

/**
 * Anthropic requires max_tokens; OpenAI callers usually omit it. 4096 is the
 * smallest output ceiling of any current Claude model, so it is never rejected.
 */
export const DEFAULT_MAX_TOKENS = 4096;

/**
 * Fields whose loss would silently change the answer's meaning are refused;
 * pure tuning knobs without an Anthropic equivalent (penalties, seed,
 * logit_bias, ...) are dropped. The README's provider table lists both.
 */
function rejectUnsupported(raw: Record<string, unknown>): void {
  const refuse = (param: string, what: string) => {
    throw new GatewayError('invalid_request', `${what} is not supported for Anthropic models.`, { param });
  };
  if (typeof raw.n === 'number' && raw.n > 1) refuse('n', 'More than one choice (n > 1)');
  if (Array.isArray(raw.tools) && raw.tools.length > 0) refuse('tools', 'Tool calling');
  if (Array.isArray(raw.functions) && raw.functions.length > 0) refuse('functions', 'Function calling');
  if (raw.logprobs === true) refuse('logprobs', 'logprobs');
  if (raw.audio != null) refuse('audio', 'Audio output');
  const format = (raw.response_format as { type?: unknown } | undefined)?.type;
  if (format !== undefined && format !== 'text') refuse('response_format', `response_format "${String(format)}"`);
}

/** The text of a message: a string, or the text parts of an array; empty text is left out. */
function textsOf(content: ChatMessage['content']): string[] {
  if (typeof content === 'string') return content === '' ? [] : [content];
  if (content == null) return [];
  const texts: string[] = [];
  for (const part of content) {
    if (part.type !== 'text') {
      throw new GatewayError('invalid_request', `Content parts of type "${part.type}" are not supported for Anthropic models.`, { param: 'messages' });
    }
    if (typeof part.text === 'string' && part.text !== '') texts.push(part.text);
  }
  return texts;
}

type TextBlock = { type: 'text'; text: string };
interface AnthropicMessage { role: 'user' | 'assistant'; content: string | TextBlock[] }

function toMessages(req: ChatRequest): { system: string[]; messages: AnthropicMessage[] } {
  const system: string[] = [];
  const turns: { role: 'user' | 'assistant'; texts: string[] }[] = [];
  for (const m of req.messages) {
    if (m.role !== 'system' && m.role !== 'developer' && m.role !== 'user' && m.role !== 'assistant') {
      throw new GatewayError('invalid_request', `Messages with role "${m.role}" are not supported for Anthropic models.`, { param: 'messages' });
    }
    const texts = textsOf(m.content);
    if (m.role === 'system' || m.role === 'developer') { system.push(...texts); continue; }
    // Anthropic refuses empty turns; an empty message carries nothing to translate.
    if (texts.length === 0) continue;
    const last = turns[turns.length - 1];
    if (last && last.role === m.role) last.texts.push(...texts);
    else turns.push({ role: m.role, texts });
  }
  if (turns.length === 0) {
    throw new GatewayError('invalid_request', 'At least one user or assistant message is required.', { param: 'messages' });
  }
  const messages = turns.map(({ role, texts }): AnthropicMessage => ({
    role,
    content: texts.length === 1 ? texts[0]! : texts.map((text): TextBlock => ({ type: 'text', text })),
  }));
  return { system, messages };
}

export function chatRequest(target: UpstreamTarget, req: ChatRequest): UpstreamRequest {
  rejectUnsupported(req.raw);
  const { system, messages } = toMessages(req);
  const maxTokens = req.max_tokens ?? (req.raw.max_completion_tokens as number | undefined) ?? DEFAULT_MAX_TOKENS;
  const body: Record<string, unknown> = { model: target.model, messages, max_tokens: maxTokens };
  if (system.length > 0) body.system = system.join('\n\n');
  if (req.temperature !== undefined) {
    // OpenAI allows 0..2, Anthropic 0..1: failing here names the field instead of relaying an upstream 400.
    if (req.temperature > 1) throw new GatewayError('invalid_request', 'Anthropic models accept temperature between 0 and 1.', { param: 'temperature' });
    body.temperature = req.temperature;
  }
  // Recent Claude models refuse temperature and top_p together; temperature is the contract's field, so it wins.
  if (req.top_p !== undefined && req.temperature === undefined) body.top_p = req.top_p;
  if (req.stop !== undefined) body.stop_sequences = typeof req.stop === 'string' ? [req.stop] : req.stop;
  if (req.user !== undefined) body.metadata = { user_id: req.user };
  if (req.stream) body.stream = true;

  const headers: Record<string, string> = { 'content-type': 'application/json', 'anthropic-version': ANTHROPIC_VERSION };
  if (target.apiKey) headers['x-api-key'] = target.apiKey;
  return { url: joinUrl(target.baseUrl, 'messages'), method: 'POST', headers, body: JSON.stringify(body) };
}
