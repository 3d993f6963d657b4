import type { UpstreamUrl } from './providers/url.js';
import type { AnswerHead } from './upstream/h1/answer-head.js';

// Types shared by every stage of a request. Provider adapters, the policy
// engine and the trace pipeline speak only these, never each other's internals.

export type ProviderKind = 'openai' | 'anthropic' | 'gemini' | 'mock';

/**
 * OpenAI usage. The three counts are always present on what sluice sends;
 * details the upstream gave (prompt_tokens_details.cached_tokens,
 * completion_tokens_details.reasoning_tokens, fields added later) ride along.
 */
export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens?: number; [key: string]: unknown };
  completion_tokens_details?: { reasoning_tokens?: number; [key: string]: unknown };
  [key: string]: unknown;
}

export interface ContentPart {
  type: string;
  text?: string;
  [key: string]: unknown;
}

export interface ChatMessage {
  role: string;
  content?: string | ContentPart[] | null;
  name?: string;
  /** Assistant turns: the calls the model made. */
  tool_calls?: ToolCall[];
  /** `tool` turns: the call this result answers. */
  tool_call_id?: string;
  [key: string]: unknown;
}

/**
 * A validated caller body. `raw` keeps every field the caller sent, for
 * pass-through to OpenAI-compatible upstreams and for translators to read
 * (tools, tool_choice, response_format, ...). `messages` are the messages
 * the upstream may see: after DLP, and never the caller's own objects.
 */
export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  stream: boolean;
  /** Choices asked for; 1 unless the caller sent `n`. */
  n: number;
  temperature?: number;
  top_p?: number;
  max_tokens?: number;
  stop?: string | string[];
  presence_penalty?: number;
  frequency_penalty?: number;
  seed?: number;
  user?: string;
  raw: Record<string, unknown>;
  /**
   * The caller's body text, where it may go as written (see guardMessages):
   * an OpenAI-compatible upstream then gets it with only the model replaced,
   * rather than a re-serialisation.
   */
  rawText?: string;
}

export interface EmbeddingsRequest {
  model: string;
  input: string[];
  /** True when the caller sent a bare string rather than an array. */
  single: boolean;
  encoding_format: 'float' | 'base64';
  dimensions?: number;
  user?: string;
  /**
   * The caller's body as sent: the members above are read from it, and any
   * other goes to an OpenAI-compatible upstream as sent, or is refused by an
   * adapter that cannot send it (docs/compatibility.md).
   */
  raw?: Readonly<Record<string, unknown>>;
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
  method: 'POST' | 'GET' | 'DELETE';
  headers: Record<string, string>;
  body: string;
}

// The chat model is OpenAI's Chat Completions wire shape in full. Every
// interface below is open (`[key: string]: unknown`): a field the upstream
// sends that nobody has named here is still on the object, and reaches the
// caller. Code reads the fields it needs and writes only the few it must.

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
  [key: string]: unknown;
}

export interface AssistantMessage {
  role: 'assistant';
  content: string | null;
  refusal?: string | null;
  tool_calls?: ToolCall[];
  annotations?: unknown[];
  /** Reasoning text where the provider gives it (DeepSeek's field name; Anthropic thinking and Gemini thoughts land here too). */
  reasoning_content?: string;
  [key: string]: unknown;
}

export interface Choice {
  index: number;
  message: AssistantMessage;
  finish_reason: string | null;
  logprobs?: unknown;
  [key: string]: unknown;
}

/** A `chat.completion` object, as the upstream sent it or as a translator built it. */
export interface ChatCompletion {
  id?: string;
  object?: string;
  created?: number;
  model?: string;
  choices: Choice[];
  usage?: Usage;
  [key: string]: unknown;
}

/** A streamed tool call: `index` names the call; the first fragment carries id and name, later ones argument text. */
export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function?: { name?: string; arguments?: string };
  [key: string]: unknown;
}

/**
 * A delta's members whose string pieces every client joins, and sluice with
 * them: the content, a refusal, and reasoning as DeepSeek spells it
 * (`reasoning_content`) and as OpenRouter, vLLM, Ollama and Groq do (`reasoning`).
 */
export const TEXT_MEMBERS = ['content', 'refusal', 'reasoning_content', 'reasoning'] as const;

export interface Delta {
  role?: string;
  content?: string | null;
  refusal?: string | null;
  tool_calls?: ToolCallDelta[];
  reasoning_content?: string;
  reasoning?: string;
  [key: string]: unknown;
}

export interface ChunkChoice {
  index: number;
  delta: Delta;
  finish_reason: string | null;
  logprobs?: unknown;
  [key: string]: unknown;
}

/** A `chat.completion.chunk`. Translators may leave out id, object, created and model: the pipeline writes those. */
export interface ChatChunk {
  id?: string;
  object?: string;
  created?: number;
  model?: string;
  choices: ChunkChoice[];
  usage?: Usage | null;
  [key: string]: unknown;
}

/** Upstream response headers a caller's SDK relies on (retry-after, x-ratelimit-*), already in OpenAI's naming. */
export type PassHeaders = Array<[string, string]>;

/** The constant head of an upstream's stream chunks, up to and including `"choices":[`. */
export interface PlainHead { prefix: string; id: string; model: string }

/** The normalised stream every adapter's translator emits, whatever its wire format. */
export type StreamEvent =
  /**
   * One chunk. `raw` is the upstream's own JSON text of this chunk, when the
   * chunk object is exactly what was parsed from it: the pipeline then splices
   * id and model into the text instead of serialising the object again.
   */
  | {
    type: 'chunk';
    readonly chunk: ChatChunk;
    raw?: string;
    /**
     * Set by a translator that did not parse this chunk (its `chunk` is parsed
     * on first read): it carries deltas, finish reasons (`finishes` says
     * whether) and usage (`usage` holds it), and `raw` begins with `prefix`,
     * the stream's constant head up to its choices, which holds the upstream's
     * `id` and `model` given here. The pipeline forwards it with that head
     * swapped, without parsing it at all; a stage that reads a finish reason
     * reads `chunk`.
     */
    plain?: PlainHead;
    /** With `plain`: the UTF-8 bytes of output text in it, read off `raw` by the translator. */
    outputBytes?: number;
    /** With `plain`: whether it finishes a choice. */
    finishes?: boolean;
    /** With `plain`: its usage, parsed off its text, when it has one. */
    usage?: Usage;
    /**
     * Without `plain`, set by a translator that found `raw` to begin with
     * this head (`prefix`, holding the chunk's own `id` and `model`): the
     * pipeline swaps the head as for a plain chunk, without a search.
     */
    head?: PlainHead;
  }
  /** A failure: `upstream` when the provider sent it as an error of its own inside the stream. */
  | { type: 'error'; message: string; upstream?: InBandError }
  /** A native Responses API event (`POST /responses` upstreams), passed through as the upstream sent it. */
  | {
    type: 'event'; name: string; data: Record<string, unknown>;
    /** The upstream's text of it; undefined where it cannot go as written (sent over several data lines). */
    raw: string | undefined;
    /** Set on the upstream's own `error` event. */
    upstream?: InBandError;
  }
  | { type: 'done' };

export interface StreamTranslator {
  /** One parsed SSE event from the upstream (event name may be undefined). */
  event(name: string | undefined, data: string): StreamEvent[];
  /**
   * The upstream's body ended, or failed after the stream began: what the
   * translator still holds, for a provider with no terminator event, whose
   * stream is whole only at its end (Gemini: usage may come after the finish
   * reasons, and a candidate after another's finish). Called at most once.
   */
  end?(): StreamEvent[];
}

/**
 * A provider's error sent inside a 200 stream (Anthropic's `overloaded_error`
 * event, an OpenAI-style `{"error": …}` chunk): the HTTP status it stands for,
 * and what it said. Before the stream's first event it fails the call as that
 * status would have, so retries and fallbacks apply (exchange.ts).
 */
export interface InBandError { status: number; details: UpstreamErrorDetails }

/** What an upstream error body said, in OpenAI's terms where it can be. */
export interface UpstreamErrorDetails {
  message: string;
  type?: string;
  param?: string | null;
  code?: string | null;
}

/**
 * One embedding: the float vector, or the upstream's own JSON text of it (an
 * array of JSON numbers, checked), which a float answer passes on unparsed:
 * as a string, or as the bytes of the upstream's body it was read from.
 */
export type EmbeddingVector = number[] | string | Buffer;

export interface EmbeddingsResult {
  vectors: EmbeddingVector[];
  usage: { prompt_tokens: number; total_tokens: number };
  /**
   * What else an OpenAI-shaped answer held, as the upstream sent it, to go
   * back to the caller: `extra`, its top-level members besides `object`,
   * `data`, `model` and `usage`; `usageExtra`, its whole `usage` object, whose
   * two counts the gateway then writes over with its own. A translated answer
   * (Gemini) has neither.
   */
  extra?: Record<string, unknown>;
  usageExtra?: Record<string, unknown>;
  /**
   * Per vector, in the same order, the item's members besides `object`,
   * `index` and `embedding`, as sent; undefined where an item had none, and
   * absent where no item had any.
   */
  itemExtra?: (Record<string, unknown> | undefined)[];
}

/** A wire protocol. One folder per protocol under src/providers/. */
export interface ProviderAdapter {
  readonly kind: ProviderKind;
  /** Throws GatewayError('invalid_request') naming the field when a caller field cannot be honoured by this provider. */
  chatRequest(target: UpstreamTarget, req: ChatRequest): UpstreamRequest;
  /** Throws GatewayError('upstream_error') when the body is not the documented shape. */
  chatResponse(body: unknown): ChatCompletion;
  streamTranslator(): StreamTranslator;
  /** The message (and OpenAI type, param, code where known) of an upstream error body. */
  errorDetails(status: number, body: string): UpstreamErrorDetails;
  /** Upstream response headers to pass back to the caller, translated to OpenAI's names (retry-after, x-ratelimit-*). */
  passHeaders(head: AnswerHead): PassHeaders;
  /** Headers for the caller that a provider puts in its error body rather than its headers (Gemini's RetryInfo -> retry-after). */
  errorHeaders?(status: number, body: string): PassHeaders;
  /** True when an error answer means the provider refused the gateway's own credential, whatever its status. */
  credentialRejected?(status: number, body: string): boolean;
  /** Absent when the provider has no embeddings API (-> embeddings_unsupported). */
  embeddingsRequest?(target: UpstreamTarget, req: EmbeddingsRequest): UpstreamRequest;
  /** The answer from its text (and the bytes it was decoded from), where that beats parsing it all (JSON.parse then embeddingsResponse is the default). */
  embeddingsText?(text: string, bytes?: Buffer): EmbeddingsResult;
  embeddingsResponse?(body: unknown): EmbeddingsResult;
}

/** One row of the trace table; section 2.3 plus the fields the gateway needs to filter spend. */
export interface TraceRecord {
  request_id: string;
  organization_id: string;
  api_key_id: string;
  /**
   * `models`: the listing and one model's entry; `stored_responses`: GET and
   * DELETE of a stored response and its input items; `other`: a /v1/ path or
   * method no route takes.
   */
  endpoint: 'chat' | 'embeddings' | 'responses' | 'models' | 'stored_responses' | 'other';
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
  /** Every upstream try behind the reply (retries, fallbacks, skipped targets); null when the first attempt answered. */
  attempts?: UpstreamAttempt[] | null;
  /** `provider/model` of the first target, when a fallback answered instead. */
  fallback_from?: string | null;
  /**
   * Present only when the organisation stores payloads: the JSON text of
   * `{request, response}`, made as the request ended (payloadText). Text, not
   * the objects: a caller's JSON nested thousands deep passes JSON.parse, but
   * the structured clone to the trace writer's thread and the spool's
   * msgpack recurse, and ran out of stack with the whole batch in hand.
   */
  payload?: string;
}

/** What the payload archive keeps of one request: the request as sent upstream (after redaction) and the response. */
export interface TracePayload { request: unknown; response: unknown }

/**
 * One try at an upstream. `status` is the upstream's HTTP status, 200 on
 * success; 502 for a connection failure, 504 for a timeout, 499 when the
 * caller left; a target that was skipped has latency 0 and 409 (no credential)
 * or 503 (circuit open).
 */
export interface UpstreamAttempt {
  provider: string;
  model: string;
  status: number;
  latency_ms: number;
}

export interface TraceSink {
  /** Must never block or throw: the request path calls it and moves on. */
  record(trace: TraceRecord): void;
}
