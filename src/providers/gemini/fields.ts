// Every top-level field of an OpenAI chat-completions request, and what the
// Gemini adapter does with it (see ../field-table.ts for the rules).
import { checkFields as check, emptyObject, isNullish, none, type FieldTable } from '../field-table.js';

export const GEMINI_REQUEST_FIELDS: FieldTable = Object.freeze({
  model: { disposition: 'translated', note: 'the route picks the Gemini model in the URL' },
  messages: { disposition: 'translated', note: 'systemInstruction and contents' },
  stream: { disposition: 'translated', note: ':streamGenerateContent?alt=sse' },
  stream_options: { disposition: 'harmless', note: 'the gateway always ends a stream with a usage chunk' },
  temperature: { disposition: 'translated', note: 'temperature' },
  top_p: { disposition: 'translated', note: 'topP' },
  n: { disposition: 'translated', note: 'candidateCount' },
  stop: { disposition: 'translated', note: 'stopSequences' },
  max_tokens: { disposition: 'translated', note: 'maxOutputTokens' },
  max_completion_tokens: { disposition: 'translated', note: 'maxOutputTokens' },
  presence_penalty: { disposition: 'translated', note: 'presencePenalty' },
  frequency_penalty: { disposition: 'translated', note: 'frequencyPenalty' },
  seed: { disposition: 'translated', note: 'seed' },
  tools: { disposition: 'translated', note: 'functionDeclarations, schemas converted' },
  tool_choice: { disposition: 'translated', note: 'toolConfig.functionCallingConfig' },
  response_format: { disposition: 'translated', note: 'responseMimeType, responseSchema' },
  reasoning_effort: { disposition: 'translated', note: 'thinkingConfig.thinkingBudget' },
  parallel_tool_calls: { disposition: 'translated', note: 'true is Gemini\'s behaviour; false is refused when tools are sent (checked with tools)' },
  user: { disposition: 'harmless', note: 'an end-user id for OpenAI\'s abuse monitoring; the trace keeps it' },
  safety_identifier: { disposition: 'harmless', note: 'an end-user id for OpenAI\'s abuse monitoring' },
  prompt_cache_key: { disposition: 'harmless', note: 'a cache-routing hint; Gemini caches implicitly' },
  prompt_cache_retention: { disposition: 'harmless', note: 'a cache-lifetime hint' },
  store: { disposition: 'harmless', note: 'storage in OpenAI\'s dashboard; no effect on the answer' },
  metadata: { disposition: 'harmless', note: 'tags for stored completions; no effect on the answer' },
  prediction: { disposition: 'harmless', note: 'a latency optimisation; the answer is the same without it' },
  logit_bias: { disposition: 'refused', note: 'Gemini has no per-token bias', accepts: emptyObject },
  logprobs: { disposition: 'refused', note: 'Gemini\'s logprobsResult is not available on every model and cannot be matched to OpenAI\'s token bytes', accepts: none },
  top_logprobs: { disposition: 'refused', note: 'as logprobs', accepts: (v) => isNullish(v) || v === 0 },
  functions: { disposition: 'refused', note: 'deprecated; send tools', accepts: (v) => isNullish(v) || (Array.isArray(v) && v.length === 0) },
  function_call: { disposition: 'refused', note: 'deprecated; send tool_choice', accepts: isNullish },
  service_tier: { disposition: 'refused', note: 'Gemini has no service tiers', accepts: (v) => isNullish(v) || v === 'auto' || v === 'default' },
  modalities: { disposition: 'refused', note: 'only text output', accepts: (v) => isNullish(v) || (Array.isArray(v) && v.every((m) => m === 'text')) },
  audio: { disposition: 'refused', note: 'no audio output', accepts: isNullish },
  web_search_options: { disposition: 'refused', note: 'Gemini\'s Google Search grounding answers in another shape', accepts: isNullish },
  verbosity: { disposition: 'refused', note: 'Gemini has no verbosity control', accepts: (v) => isNullish(v) || v === 'medium' },
});

/** Throws the 400 for the first field of `raw` that the table refuses or does not know. */
export function checkFields(raw: Record<string, unknown>): void {
  check(GEMINI_REQUEST_FIELDS, 'Gemini', raw);
}

/** Every top-level field of an OpenAI embeddings request, and what the Gemini adapter does with it. */
export const GEMINI_EMBEDDING_FIELDS: FieldTable = Object.freeze({
  model: { disposition: 'translated', note: 'the Gemini model in the URL and in each request' },
  input: { disposition: 'translated', note: 'content.parts, one request per input' },
  encoding_format: { disposition: 'translated', note: 'the gateway asks for floats and encodes base64 itself' },
  dimensions: { disposition: 'translated', note: 'outputDimensionality' },
  user: { disposition: 'harmless', note: 'an end-user id for OpenAI\'s abuse monitoring' },
});

/** Throws the 400 for the first field of an embeddings body that the table does not know. */
export function checkEmbeddingFields(raw: Readonly<Record<string, unknown>>): void {
  check(GEMINI_EMBEDDING_FIELDS, 'Gemini', raw);
}
