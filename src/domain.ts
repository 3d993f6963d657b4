import type { UpstreamUrl } from './providers/url.js';

// Types shared by every stage of a request. Provider adapters, the policy
// engine and the trace pipeline speak only these, never each other's internals.

export type ProviderKind = 'openai' | 'anthropic' | 'gemini' | 'mock';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface ContentPart {
  type: string;
  text?: string;
  [key: string]: unknown;
}

export interface ChatMessage {
  role: string;
  content: string | ContentPart[] | null;
  [key: string]: unknown;
}

/** A validated caller body. `raw` keeps every field the caller sent, for pass-through to OpenAI-compatible upstreams. */
export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  stream: boolean;
  temperature?: number;
  top_p?: number;
  max_tokens?: number;
  stop?: string | string[];
  presence_penalty?: number;
  frequency_penalty?: number;
  seed?: number;
  user?: string;
  raw: Record<string, unknown>;
}

export interface EmbeddingsRequest {
  model: string;
  input: string[];
  /** True when the caller sent a bare string rather than an array. */
  single: boolean;
  encoding_format: 'float' | 'base64';
  dimensions?: number;
  user?: string;
}

/** What the catalogue knows of one upstream model. */
export interface ModelEntry {
  id: string;
  provider: string;
  type: 'chat' | 'embedding';
  aliases: readonly string[];
  context_window: number;
  pricing: { prompt: number; completion: number };
}

/** A resolved upstream: which provider, which model, and the credential to use. */
export interface UpstreamTarget {
  provider: string;
  kind: ProviderKind;
  baseUrl: string;
  model: string;
  apiKey: string | undefined;
}

/** One HTTP request to an upstream, as built by an adapter. */
export interface UpstreamRequest {
  url: UpstreamUrl;
  method: 'POST' | 'GET';
  headers: Record<string, string>;
  body: string;
}

export interface ChatResult {
  content: string;
  finish_reason: string;
  usage: Usage;
}

/** The normalised stream every adapter's translator emits, whatever its wire format. */
export type StreamEvent =
  | { type: 'delta'; content?: string; role?: string; finish_reason?: string }
  | { type: 'usage'; usage: Usage }
  | { type: 'error'; message: string }
  | { type: 'done' };

export interface StreamTranslator {
  /** One parsed SSE event from the upstream (event name may be undefined). */
  event(name: string | undefined, data: string): StreamEvent[];
}

export interface EmbeddingsResult {
  vectors: number[][];
  usage: { prompt_tokens: number; total_tokens: number };
}

/** A wire protocol. One folder per protocol under src/providers/. */
export interface ProviderAdapter {
  readonly kind: ProviderKind;
  chatRequest(target: UpstreamTarget, req: ChatRequest): UpstreamRequest;
  /** Throws GatewayError('upstream_error') when the body is not the documented shape. */
  chatResponse(body: unknown): ChatResult;
  streamTranslator(): StreamTranslator;
  /** A human message extracted from an upstream error body. */
  errorMessage(status: number, body: string): string;
  /** True when an error answer means the provider refused the gateway's own credential, whatever its status. */
  credentialRejected?(status: number, body: string): boolean;
  /** Absent when the provider has no embeddings API (-> embeddings_unsupported). */
  embeddingsRequest?(target: UpstreamTarget, req: EmbeddingsRequest): UpstreamRequest;
  embeddingsResponse?(body: unknown): EmbeddingsResult;
}

/** One row of the trace table; section 2.3 plus the fields the gateway needs to filter spend. */
export interface TraceRecord {
  request_id: string;
  organization_id: string;
  api_key_id: string;
  endpoint: 'chat' | 'embeddings';
  provider: string | null;
  model: string | null;
  requested_model: string | null;
  route_reason: string | null;
  latency_ms: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cost_usd: number;
  status_code: number;
  error_code: string | null;
  redactions: number;
  streamed: boolean;
  ttfb_ms: number | null;
  stream_aborted: boolean;
  disclosed_bytes: number;
  dry_run: boolean;
  /** Epoch milliseconds at request start. */
  created_at: number;
  /** Present only when the organisation stores payloads: the request as sent upstream (after redaction) and the response. */
  payload?: { request: unknown; response: unknown };
}

export interface TraceSink {
  /** Must never block or throw: the request path calls it and moves on. */
  record(trace: TraceRecord): void;
}
