// Maps what can go wrong talking to a provider onto the catalogue. A provider's
// 400/404/422 is the caller's request and keeps its status; 429 stays 429 so SDKs
// back off; the provider refusing our own credential, or failing, is a 502.
import type { InBandError, PassHeaders, UpstreamErrorDetails } from '../domain.js';
import { GatewayError } from '../errors.js';
import { UpstreamTimeoutError } from './h1/errors.js';

/**
 * A provider's error answer. When the status passes through (the caller's own
 * mistake, or a rate limit), so do the provider's message, type, param, code
 * and rate-limit headers: the caller's SDK then retries and classifies exactly
 * as against the provider. A failure that is the gateway's (a refused
 * credential, a provider fault) is a 502 that says which upstream status it was.
 */
export function upstreamStatusError(status: number, details: UpstreamErrorDetails | string, credentialRejected = false, headers: PassHeaders = []): GatewayError {
  const d = typeof details === 'string' ? { message: details } : details;
  const passThrough = !credentialRejected && (status === 400 || status === 404 || status === 409 || status === 413 || status === 422 || status === 429);
  if (passThrough) {
    return new GatewayError('upstream_error', d.message, {
      status, upstreamStatus: status, headers, upstream: { type: d.type, param: d.param, code: d.code },
    });
  }
  return new GatewayError('upstream_error', `Upstream answered ${status}: ${d.message}`, {
    status: status === 504 ? 504 : 502,
    upstreamStatus: status,
    headers: headers.filter(([k]) => k === 'retry-after' || k === 'retry-after-ms'),
  });
}

/**
 * What an error event in a stream stands for: the provider's own error, as the
 * status it named would have been (in-band-error.ts), or the translator's
 * finding (a malformed chunk), a 502.
 */
export function inBandFailure(message: string, upstream: InBandError | undefined, headers: PassHeaders = []): GatewayError {
  return upstream ? upstreamStatusError(upstream.status, upstream.details, false, headers) : new GatewayError('upstream_error', message);
}

export function upstreamTransportError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  if (err instanceof UpstreamTimeoutError) {
    return new GatewayError('upstream_timeout', `The upstream did not answer in time (${err.message}).`, { cause: err });
  }
  const msg = err instanceof Error ? err.message : String(err);
  return new GatewayError('upstream_error', `The upstream connection failed: ${msg}`, { cause: err });
}
