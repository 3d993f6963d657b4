// Every top-level field of an OpenAI chat-completions request, and what the
// Anthropic adapter does with it (see ../field-table.ts for the rules).
import { checkFields as check, emptyList, emptyObject, isNullish, none, zero, type FieldTable } from '../field-table.js';

export const ANTHROPIC_REQUEST_FIELDS: FieldTable = Object.freeze({
  model: { disposition: 'translated', note: 'the route picks the Claude model' },
  messages: { disposition: 'translated', note: 'system and messages, with tool_use, tool_result, image and thinking blocks' },
  stream: { disposition: 'translated', note: 'stream: true, events translated to chunks' },
  stream_options: { disposition: 'harmless', note: 'the gateway always ends a stream with a usage chunk' },
  temperature: { disposition: 'translated', note: 'temperature, 0 to 1 (above 1 is refused)' },
  top_p: { disposition: 'translated', note: 'top_p (1, the default, is not sent; with temperature refused)' },
  n: { disposition: 'refused', note: 'one answer per call', accepts: (v) => isNullish(v) || v === 1 },
  stop: { disposition: 'translated', note: 'stop_sequences' },
  max_tokens: { disposition: 'translated', note: 'max_tokens (4096 when absent)' },
  max_completion_tokens: { disposition: 'translated', note: 'max_tokens' },
  tools: { disposition: 'translated', note: 'tools with input_schema' },
  tool_choice: { disposition: 'translated', note: 'auto, none, any, or tool' },
  parallel_tool_calls: { disposition: 'translated', note: 'false sets disable_parallel_tool_use' },
  response_format: { disposition: 'translated', note: 'json_schema and json_object through one forced tool, answered as content' },
  reasoning_effort: { disposition: 'translated', note: 'thinking with a budget; thinking comes back as reasoning_content' },
  user: { disposition: 'translated', note: 'metadata.user_id' },
  safety_identifier: { disposition: 'harmless', note: 'an end-user id for OpenAI\'s abuse monitoring' },
  prompt_cache_key: { disposition: 'harmless', note: 'a cache-routing hint' },
  prompt_cache_retention: { disposition: 'harmless', note: 'a cache-lifetime hint' },
  store: { disposition: 'harmless', note: 'storage in OpenAI\'s dashboard; no effect on the answer' },
  metadata: { disposition: 'harmless', note: 'tags for stored completions; no effect on the answer' },
  prediction: { disposition: 'harmless', note: 'a latency optimisation; the answer is the same without it' },
  service_tier: { disposition: 'refused', note: 'OpenAI\'s tiers have no Anthropic counterpart', accepts: (v) => isNullish(v) || v === 'auto' || v === 'default' },
  seed: { disposition: 'refused', note: 'Anthropic has no seed, so answers are not reproducible', accepts: isNullish },
  presence_penalty: { disposition: 'refused', note: 'Anthropic has no penalties', accepts: zero },
  frequency_penalty: { disposition: 'refused', note: 'Anthropic has no penalties', accepts: zero },
  logit_bias: { disposition: 'refused', note: 'Anthropic has no per-token bias', accepts: emptyObject },
  logprobs: { disposition: 'refused', note: 'Anthropic returns no log probabilities', accepts: none },
  top_logprobs: { disposition: 'refused', note: 'as logprobs', accepts: zero },
  functions: { disposition: 'refused', note: 'deprecated; send tools', accepts: emptyList },
  function_call: { disposition: 'refused', note: 'deprecated; send tool_choice', accepts: isNullish },
  modalities: { disposition: 'refused', note: 'only text output', accepts: (v) => isNullish(v) || (Array.isArray(v) && v.every((m) => m === 'text')) },
  audio: { disposition: 'refused', note: 'no audio output', accepts: isNullish },
  web_search_options: { disposition: 'refused', note: 'Anthropic\'s web search is a server tool with another answer shape', accepts: isNullish },
  verbosity: { disposition: 'refused', note: 'Anthropic has no verbosity control', accepts: (v) => isNullish(v) || v === 'medium' },
});

export function checkFields(raw: Record<string, unknown>): void {
  check(ANTHROPIC_REQUEST_FIELDS, 'Anthropic', raw);
}
