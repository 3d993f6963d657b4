// OpenAI sampling, length, format and reasoning fields -> Gemini `generationConfig`.
import type { ChatRequest } from '../../domain.js';
import { GatewayError } from '../../errors.js';
import { isObj, ownEntry } from '../json-shape.js';
import { checkResponseFormat } from '../known-members.js';
import { toGeminiSchema } from './schema.js';

type Json = Record<string, any>;

/**
 * reasoning_effort -> thinkingBudget (tokens), the budgets Google's own
 * OpenAI-compatible endpoint uses for low/medium/high; "none" turns thinking
 * off (where the model allows it), "minimal" is the smallest useful budget.
 */
export const THINKING_BUDGET: Readonly<Record<string, number>> = Object.freeze({
  none: 0, minimal: 512, low: 1024, medium: 8192, high: 24576,
});

/** OpenAI writes properties in schema order; Gemini keeps an order only when told (propertyOrdering). */
function withOrdering(s: Json): Json {
  if (s.properties) {
    for (const v of Object.values(s.properties)) withOrdering(v as Json);
    s.propertyOrdering ??= Object.keys(s.properties);
  }
  if (s.items) withOrdering(s.items);
  if (Array.isArray(s.anyOf)) s.anyOf.forEach(withOrdering);
  return s;
}

function responseFormat(config: Json, format: unknown): void {
  if (format == null) return;
  const type = isObj(format) ? format.type : undefined;
  if (isObj(format)) checkResponseFormat(format, 'Gemini');
  if (type === 'text') return;
  if (type === 'json_object') { config.responseMimeType = 'application/json'; return; }
  if (type === 'json_schema' && isObj(format)) {
    const schema = format.json_schema?.schema;
    if (!isObj(schema)) throw new GatewayError('invalid_request', 'response_format.json_schema.schema is required.', { param: 'response_format.json_schema.schema' });
    config.responseMimeType = 'application/json';
    config.responseSchema = withOrdering(toGeminiSchema(schema, 'response_format.json_schema.schema'));
    return;
  }
  throw new GatewayError('invalid_request', `response_format ${JSON.stringify(type)} is not supported for Gemini models.`, { param: 'response_format.type' });
}

export function generationConfig(req: ChatRequest): Json | undefined {
  const raw = req.raw;
  const config: Json = {};
  if (req.temperature !== undefined) config.temperature = req.temperature;
  if (req.top_p !== undefined) config.topP = req.top_p;
  if (req.max_tokens !== undefined) config.maxOutputTokens = req.max_tokens;
  if (req.stop !== undefined) config.stopSequences = typeof req.stop === 'string' ? [req.stop] : req.stop;
  if (req.seed !== undefined) config.seed = req.seed;
  if (req.presence_penalty !== undefined) config.presencePenalty = req.presence_penalty;
  if (req.frequency_penalty !== undefined) config.frequencyPenalty = req.frequency_penalty;
  if (req.n > 1) config.candidateCount = req.n;
  responseFormat(config, raw.response_format);
  const effort = raw.reasoning_effort;
  if (effort != null) {
    const budget = typeof effort === 'string' ? ownEntry(THINKING_BUDGET, effort) : undefined;
    if (budget === undefined) {
      throw new GatewayError('invalid_request', `reasoning_effort ${JSON.stringify(effort)} is not one of ${Object.keys(THINKING_BUDGET).join(', ')}.`, { param: 'reasoning_effort' });
    }
    // Thought summaries come back as reasoning_content; with thinking off there are none to ask for.
    config.thinkingConfig = budget === 0 ? { thinkingBudget: 0 } : { thinkingBudget: budget, includeThoughts: true };
  }
  return Object.keys(config).length > 0 ? config : undefined;
}
