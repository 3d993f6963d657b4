// OpenAI chat body -> Anthropic Messages API body (POST {base_url}/messages).
import type { ChatRequest, UpstreamRequest, UpstreamTarget } from '../../domain.js';
import { GatewayError } from '../../errors.js';
import { ownEntry } from '../json-shape.js';
import { joinUrl } from '../url.js';
import { checkFields } from './fields.js';
import { translateMessages } from './messages.js';
import { toolFields } from './tools.js';

export const ANTHROPIC_VERSION = '2023-06-01';

/**
 * Anthropic requires max_tokens; OpenAI callers usually omit it. 4096 is the
 * smallest output ceiling of any current Claude model, so it is never rejected.
 */
export const DEFAULT_MAX_TOKENS = 4096;

/**
 * reasoning_effort -> a thinking budget. 1024 is Anthropic's minimum; the
 * others follow the same steps as the Gemini adapter's, so one effort costs
 * about the same reasoning on either provider.
 */
export const THINKING_BUDGET: Readonly<Record<string, number>> = { minimal: 1024, low: 2048, medium: 8192, high: 24576 };

const refuse = (param: string, message: string): never => {
  throw new GatewayError('invalid_request', message, { param });
};

/** The thinking block and the max_tokens to send: thinking counts against max_tokens, which must exceed its budget. */
function thinkingAndMax(raw: Record<string, unknown>, requested: number | undefined): { thinking?: Record<string, unknown>; max: number } {
  const effort = raw.reasoning_effort;
  if (effort === undefined || effort === null || effort === 'none') return { max: requested ?? DEFAULT_MAX_TOKENS };
  const budget = typeof effort === 'string' ? ownEntry(THINKING_BUDGET, effort) : undefined;
  if (budget === undefined) return refuse('reasoning_effort', 'reasoning_effort must be minimal, low, medium or high for Anthropic models.');
  if (requested !== undefined && requested <= budget) {
    const param = raw.max_completion_tokens != null ? 'max_completion_tokens' : 'max_tokens';
    return refuse(param, `${param} must be above the thinking budget of reasoning_effort "${effort}" (${budget} tokens) for Anthropic models.`);
  }
  return { thinking: { type: 'enabled', budget_tokens: budget }, max: requested ?? budget + DEFAULT_MAX_TOKENS };
}

export function chatRequest(target: UpstreamTarget, req: ChatRequest): UpstreamRequest {
  const raw = req.raw;
  checkFields(raw);
  const { system, messages } = translateMessages(req.messages);
  const { thinking, max } = thinkingAndMax(raw, req.max_tokens);
  const body: Record<string, unknown> = { model: target.model, messages, max_tokens: max };
  // One string, as before marks were read, unless a block is marked for the prompt cache: the mark is the block's.
  if (system.length > 0) body.system = system.some((b) => b.cache_control) ? system : system.map((b) => b.text as string).join('\n\n');
  if (thinking) body.thinking = thinking;
  if (req.temperature !== undefined) {
    // OpenAI allows 0..2, Anthropic 0..1: failing here names the field instead of relaying an upstream 400.
    if (req.temperature > 1) refuse('temperature', 'Anthropic models accept temperature between 0 and 1.');
    if (thinking && req.temperature !== 1) refuse('temperature', 'With reasoning_effort, Anthropic models accept only temperature 1.');
    body.temperature = req.temperature;
  }
  // top_p 1 is the default: sent or not, the answer is the same. Recent Claude models refuse
  // temperature and top_p together, so both is this gateway's 400 rather than the provider's.
  if (req.top_p !== undefined && req.top_p !== 1) {
    if (req.temperature !== undefined) refuse('top_p', 'Anthropic models accept temperature or top_p, not both.');
    if (thinking && req.top_p < 0.95) refuse('top_p', 'With reasoning_effort, Anthropic models accept top_p from 0.95 to 1.');
    body.top_p = req.top_p;
  }
  if (req.stop !== undefined) body.stop_sequences = typeof req.stop === 'string' ? [req.stop] : req.stop;
  if (req.user !== undefined) body.metadata = { user_id: req.user };
  Object.assign(body, toolFields(raw, thinking !== undefined));
  if (req.stream) body.stream = true;

  const headers: Record<string, string> = { 'content-type': 'application/json', 'anthropic-version': ANTHROPIC_VERSION };
  if (target.apiKey) headers['x-api-key'] = target.apiKey;
  return { url: joinUrl(target.baseUrl, 'messages'), method: 'POST', headers, body: JSON.stringify(body) };
}
