// OpenAI chat body -> Anthropic Messages API body (POST {base_url}/messages).
// Anthropic has no "system" role: system (and "developer") messages move to the
// top-level `system` field. Consecutive turns of one role are merged, since the
// API has historically required user/assistant alternation.
import type { ChatRequest, UpstreamRequest, UpstreamTarget } from '../../domain.js';
import { GatewayError } from '../../errors.js';
import { rejectUnsupported, textTurns, type TextTurn } from '../text-only-chat.js';
import { joinUrl } from '../url.js';

export const ANTHROPIC_VERSION = '2023-06-01';

/**
 * Anthropic requires max_tokens; OpenAI callers usually omit it. 4096 is the
 * smallest output ceiling of any current Claude model, so it is never rejected.
 */
export const DEFAULT_MAX_TOKENS = 4096;

type TextBlock = { type: 'text'; text: string };
interface AnthropicMessage { role: 'user' | 'assistant'; content: string | TextBlock[] }

function toMessages(turns: TextTurn[]): AnthropicMessage[] {
  return turns.map(({ role, texts }): AnthropicMessage => ({
    role,
    content: texts.length === 1 ? texts[0]! : texts.map((text): TextBlock => ({ type: 'text', text })),
  }));
}

export function chatRequest(target: UpstreamTarget, req: ChatRequest): UpstreamRequest {
  // Tuning knobs without an Anthropic equivalent (penalties, seed, logit_bias, ...) are dropped, not refused.
  rejectUnsupported(req.raw, 'Anthropic');
  const { system, turns } = textTurns(req, 'Anthropic');
  const messages = toMessages(turns);
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
