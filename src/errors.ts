// The one error catalogue. Every error a caller can see is listed here with a
// stable code, its HTTP status and its OpenAI-style `type`. The README lists the
// same codes, and test/errors-catalogue.test.ts keeps the two in step.

export interface ErrorSpec {
  readonly status: number;
  readonly type: string;
  readonly message: string;
}

export const ERRORS = {
  unauthorized: { status: 401, type: 'authentication_error', message: 'Invalid, missing or revoked API key.' },
  forbidden: { status: 403, type: 'permission_error', message: 'This API key may not manage its organisation.' },
  payload_link_invalid: { status: 403, type: 'permission_error', message: 'This payload link is invalid or has expired; fetch the trace again for a fresh one.' },
  not_found: { status: 404, type: 'invalid_request_error', message: 'No such object.' },
  route_not_found: { status: 404, type: 'invalid_request_error', message: 'Unknown path.' },
  method_not_allowed: { status: 405, type: 'invalid_request_error', message: 'Method not allowed on this path.' },
  method_not_implemented: { status: 501, type: 'invalid_request_error', message: 'No path here takes this method.' },
  invalid_request: { status: 400, type: 'invalid_request_error', message: 'The request is not valid.' },
  invalid_json: { status: 400, type: 'invalid_request_error', message: 'The body is not valid JSON.' },
  body_too_large: { status: 413, type: 'invalid_request_error', message: 'The request body is too large.' },
  model_not_found: { status: 404, type: 'invalid_request_error', message: 'The model does not exist or is not activated for this organisation.' },
  model_not_configured: { status: 409, type: 'invalid_request_error', message: 'The model\'s provider has no credential mounted.' },
  no_model_available: { status: 422, type: 'invalid_request_error', message: 'No activated, configured model fits this request.' },
  route_target_invalid: { status: 409, type: 'invalid_request_error', message: 'A routing rule points at a model that cannot be used.' },
  conflict: { status: 409, type: 'invalid_request_error', message: 'The object conflicts with an existing one.' },
  embeddings_unsupported: { status: 400, type: 'invalid_request_error', message: 'This model\'s provider has no embeddings API.' },
  tokenized_input_unsupported: { status: 400, type: 'invalid_request_error', message: 'Pre-tokenised input is not accepted; send text.' },
  embeddings_incomplete: { status: 502, type: 'upstream_error', message: 'The upstream returned fewer embeddings than inputs.' },
  prompt_blocked: { status: 400, type: 'invalid_request_error', message: 'The prompt was blocked by the prompt shield.' },
  content_blocked: { status: 422, type: 'invalid_request_error', message: 'The model output was blocked by output moderation.' },
  upstream_error: { status: 502, type: 'upstream_error', message: 'The upstream provider failed.' },
  upstream_timeout: { status: 504, type: 'upstream_error', message: 'The upstream provider did not answer in time.' },
  policy_unavailable: { status: 503, type: 'gateway_error', message: 'The policy engine could not scan this request; it was not sent.' },
  auth_unavailable: { status: 503, type: 'gateway_error', message: 'API keys cannot be checked right now; retry shortly.' },
  gateway_error: { status: 500, type: 'gateway_error', message: 'Internal gateway error.' },
  shutting_down: { status: 503, type: 'gateway_error', message: 'The gateway is shutting down.' },
  upstream_unavailable: { status: 503, type: 'upstream_error', message: 'The upstream is failing and its circuit is open; retry shortly.' },
  rate_limited: { status: 429, type: 'rate_limit_error', message: 'Rate limit reached; retry after the time in retry-after.' },
  budget_exceeded: { status: 429, type: 'insufficient_quota', message: 'The spend budget for this period is used up.' },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERRORS;

/** What a provider's own error body said, kept so the caller's SDK sees the provider's `type`, `param` and `code`. */
export interface UpstreamFault {
  type?: string | undefined;
  param?: string | null | undefined;
  code?: string | null | undefined;
}

export interface GatewayErrorOptions {
  param?: string;
  upstreamStatus?: number;
  status?: number;
  cause?: unknown;
  /** The provider's type/param/code, shown instead of the catalogue's in the JSON body. */
  upstream?: UpstreamFault;
  /** Response headers the caller's SDK needs with this error (retry-after, x-ratelimit-*). */
  headers?: ReadonlyArray<readonly [string, string]>;
}

export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: string;
  readonly param: string | null;
  /** Upstream status, kept for traces when the error came from a provider. */
  readonly upstreamStatus: number | undefined;
  readonly upstream: UpstreamFault | undefined;
  readonly headers: ReadonlyArray<readonly [string, string]>;

  constructor(code: ErrorCode, message?: string, opts: GatewayErrorOptions = {}) {
    const spec: ErrorSpec = ERRORS[code];
    super(message ?? spec.message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'GatewayError';
    this.code = code;
    // Only upstream_error varies its status (a provider's 429 stays 429); every other code has one status.
    this.status = opts.status ?? spec.status;
    this.type = spec.type;
    this.param = opts.param ?? null;
    this.upstreamStatus = opts.upstreamStatus;
    this.upstream = opts.upstream;
    this.headers = opts.headers ?? [];
  }
}

/**
 * What V8 throws when a recursion runs out of stack. JSON.parse reads any
 * depth, but JSON.stringify, structured clone and every walk over a caller's
 * JSON recurse: a body of a few KB nested some 5,000 levels deep ran them out.
 */
const STACK_EXHAUSTED = 'Maximum call stack size exceeded';

const stackExhausted = (err: unknown): boolean => err instanceof RangeError && err.message === STACK_EXHAUSTED;

/**
 * Anything thrown that is not a GatewayError is a bug, and becomes a 500
 * without leaking internals; except exhausted stack, which on the request
 * path only JSON nested thousands deep causes: a 400, as the caller's to fix.
 */
export function toGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  if (stackExhausted(err)) return new GatewayError('invalid_request', 'The JSON is nested too deeply to be processed.', { cause: err });
  return new GatewayError('gateway_error', undefined, { cause: err });
}

/**
 * `err` as thrown while reading an upstream's answer: exhausted stack there is
 * the answer's nesting, a 502 as any answer sluice cannot read is, not the
 * caller's 400. Anything else is left as it is.
 */
export function answerFault(err: unknown): unknown {
  return stackExhausted(err) ? new GatewayError('upstream_error', 'The upstream\'s answer is nested too deeply to be processed.', { cause: err }) : err;
}

/**
 * The JSON body of every pre-stream error, in the shape the openai SDK reads.
 * A provider's own error keeps its `type`, `param` and `code` where it gave
 * them, so the SDK's error classes and a caller's `code` checks
 * (`context_length_exceeded`, `rate_limit_exceeded`) behave as they do against
 * the provider itself.
 */
export function errorBody(err: GatewayError, requestId: string): string {
  const u = err.upstream;
  return JSON.stringify({
    error: {
      message: err.message,
      type: u?.type ?? err.type,
      param: u?.param ?? err.param,
      code: u?.code ?? err.code,
    },
    request_id: requestId,
  });
}

/** The terminal SSE event of section 6, for failures after the first chunk. */
export function sseErrorEvent(code: ErrorCode, message: string, requestId: string): string {
  return `event: error\ndata: ${JSON.stringify({ error: { code, message, type: 'gateway_error' }, request_id: requestId })}\n\n`;
}
