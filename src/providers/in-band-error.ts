// The HTTP status a provider's in-stream error stands for. Such an error comes
// after a 200 head, so its status is read off the error itself: a numeric code
// (vLLM and Gemini put the HTTP status there), else its type or google.rpc
// status. One that says nothing known is the provider's own failure, a 500.
import type { InBandError, StreamEvent, UpstreamErrorDetails } from '../domain.js';
import { isObj } from './json-shape.js';

const BY_NAME: Record<string, number> = {
  // OpenAI's and Anthropic's error types, and OpenAI's codes that name a status.
  invalid_request_error: 400,
  context_length_exceeded: 400,
  invalid_prompt: 400,
  authentication_error: 401,
  invalid_api_key: 401,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  rate_limit_exceeded: 429,
  insufficient_quota: 429,
  api_error: 500,
  server_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
  // Gemini's google.rpc statuses.
  INVALID_ARGUMENT: 400,
  FAILED_PRECONDITION: 400,
  OUT_OF_RANGE: 400,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  NOT_FOUND: 404,
  RESOURCE_EXHAUSTED: 429,
  INTERNAL: 500,
  UNAVAILABLE: 503,
  DEADLINE_EXCEEDED: 504,
};

function statusOf(error: Record<string, unknown>): number {
  const code = typeof error.code === 'string' && /^\d{3}$/.test(error.code) ? Number(error.code) : error.code;
  if (typeof code === 'number' && Number.isInteger(code) && code >= 400 && code <= 599) return code;
  for (const name of [error.type, error.status, error.code]) {
    if (typeof name === 'string' && Object.hasOwn(BY_NAME, name)) return BY_NAME[name]!;
  }
  // The Responses API's codes for a caller's bad input (invalid_image_url, invalid_base64_image…).
  if (typeof error.code === 'string' && error.code.startsWith('invalid_')) return 400;
  return 500;
}

/** `error` is the provider's error object as it sent it; `details` reads what it said, given the status it stands for. */
export function inBandError(error: Record<string, unknown>, details: (status: number) => UpstreamErrorDetails): InBandError {
  const status = statusOf(error);
  return { status, details: details(status) };
}

/**
 * The error event for a chat stream's in-band error: `error` as the provider
 * sent it, read with `details`, the adapter's reading of an error body, since
 * the event's whole `data` reads as one.
 */
export function inBandErrorEvent(error: unknown, data: string, details: (status: number, body: string) => UpstreamErrorDetails): StreamEvent[] {
  const upstream = inBandError(isObj(error) ? error : {}, (status) => details(status, data));
  return [{ type: 'error', message: upstream.details.message, upstream }];
}
