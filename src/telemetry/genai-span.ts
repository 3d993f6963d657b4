// One trace record as OpenTelemetry GenAI attributes (semantic conventions for
// generative AI client spans). Pure: the exporter and its test share it, and the
// span always says what the trace row says.
import type { TraceRecord } from '../domain.js';

/** gen_ai.provider.name for each wire protocol, as the conventions spell the well-known values. */
const PROVIDER_NAME: Record<string, string> = { openai: 'openai', anthropic: 'anthropic', gemini: 'gcp.gemini', mock: 'sluice.mock' };

export type SpanAttributes = Record<string, string | number | boolean>;

export interface GenAiSpan {
  name: string;
  attributes: SpanAttributes;
  error: boolean;
}

/** `kindOf` maps a configured provider name (`up`) to its protocol (`openai`). */
export function genAiSpan(t: TraceRecord, kindOf: (provider: string) => string | undefined): GenAiSpan {
  const operation = t.endpoint === 'embeddings' ? 'embeddings' : 'chat';
  const a: SpanAttributes = {
    'gen_ai.operation.name': operation,
    'http.response.status_code': t.status_code,
    'sluice.request_id': t.request_id,
    'sluice.organization_id': t.organization_id,
    'sluice.api_key_id': t.api_key_id,
    'sluice.streamed': t.streamed,
  };
  if (t.provider) {
    const kind = kindOf(t.provider);
    const name = kind ? PROVIDER_NAME[kind] ?? kind : t.provider;
    a['gen_ai.provider.name'] = name;
    // The older attribute, still what many backends read.
    a['gen_ai.system'] = name;
    a['sluice.provider'] = t.provider;
  }
  if (t.requested_model) a['gen_ai.request.model'] = t.requested_model;
  if (t.model) a['gen_ai.response.model'] = t.model;
  if (t.prompt_tokens || t.completion_tokens) {
    a['gen_ai.usage.input_tokens'] = t.prompt_tokens;
    a['gen_ai.usage.output_tokens'] = t.completion_tokens;
  }
  if (t.route_reason) a['sluice.route_reason'] = t.route_reason;
  if (t.cost_usd) a['sluice.cost_usd'] = t.cost_usd;
  if (t.ttfb_ms !== null) a['sluice.ttfb_ms'] = t.ttfb_ms;
  if (t.stream_aborted) a['sluice.stream_aborted'] = true;
  if (t.dry_run) a['sluice.dry_run'] = true;
  const error = t.status_code >= 400 || t.stream_aborted || t.error_code !== null;
  if (error) a['error.type'] = t.error_code ?? String(t.status_code);
  const model = t.requested_model ?? t.model;
  return { name: model ? `${operation} ${model}` : operation, attributes: a, error };
}
