// Maps what can go wrong talking to a provider onto the catalogue. A provider's
// 400/404/422 is the caller's request and keeps its status; 429 stays 429 so SDKs
// back off; the provider refusing our own credential, or failing, is a 502.
import { errors as undiciErrors } from 'undici';
import { GatewayError } from '../errors.js';

export function upstreamStatusError(status: number, message: string, credentialRejected = false): GatewayError {
  const passThrough = !credentialRejected && (status === 400 || status === 404 || status === 409 || status === 413 || status === 422 || status === 429);
  return new GatewayError('upstream_error', `Upstream answered ${status}: ${message}`, {
    status: passThrough ? status : status === 504 ? 504 : 502,
    upstreamStatus: status,
  });
}

export function upstreamTransportError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  if (err instanceof undiciErrors.HeadersTimeoutError || err instanceof undiciErrors.BodyTimeoutError || err instanceof undiciErrors.ConnectTimeoutError) {
    return new GatewayError('upstream_timeout', `The upstream did not answer in time (${(err as Error).message}).`, { cause: err });
  }
  const msg = err instanceof Error ? err.message : String(err);
  return new GatewayError('upstream_error', `The upstream connection failed: ${msg}`, { cause: err });
}
