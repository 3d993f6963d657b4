import type { UpstreamErrorDetails } from '../../domain.js';

/**
 * Anthropic error bodies are `{type: "error", error: {type, message}}`. Its
 * error types share OpenAI's names (invalid_request_error, rate_limit_error,
 * authentication_error…), so `type` is passed on as is; Anthropic gives no
 * param or code. Anything else is shown truncated.
 */
export function errorDetails(status: number, body: string): UpstreamErrorDetails {
  try {
    const e = JSON.parse(body)?.error;
    if (typeof e?.message === 'string' && e.message) {
      return { message: e.message, type: typeof e.type === 'string' ? e.type : undefined, param: null, code: null };
    }
  } catch { /* not JSON */ }
  return { message: body ? body.slice(0, 300) : `Upstream answered HTTP ${status}.` };
}
