// Short-lived signed links to a payload archive. The signature covers the
// request id and the expiry, so neither can be changed without the secret;
// the link itself is the credential, which is why it expires in minutes.
import { createHmac, timingSafeEqual } from 'node:crypto';

export type SignatureCheck = 'ok' | 'expired' | 'invalid';

function sign(requestId: string, expires: number, secret: string): string {
  return createHmac('sha256', secret).update(`${requestId}.${expires}`).digest('base64url');
}

export function signPayloadUrl(baseUrl: string, requestId: string, secret: string, ttlSeconds = 300, nowMs = Date.now()): string {
  // Rounded up to the second: a link lives at least ttlSeconds. Rounded down, one minted late in a
  // second lost up to a second of it (with ttl_seconds 1, it could be expired on arrival).
  const expires = Math.ceil(nowMs / 1000) + ttlSeconds;
  const base = baseUrl.replace(/\/+$/, '');
  return `${base}/v1/payloads/${encodeURIComponent(requestId)}?expires=${expires}&sig=${sign(requestId, expires, secret)}`;
}

/**
 * Checks the `expires` and `sig` query values of a payload link. The signature
 * is checked first, so an altered expiry reads as invalid, not expired. Both
 * failures are a 403 to the caller.
 */
export function verifyPayloadSignature(
  requestId: string, expires: string | null | undefined, sig: string | null | undefined, secret: string, nowMs = Date.now(),
): SignatureCheck {
  if (!expires || !sig || !/^\d{1,12}$/.test(expires)) return 'invalid';
  const want = Buffer.from(sign(requestId, Number(expires), secret));
  const got = Buffer.from(sig);
  if (got.length !== want.length || !timingSafeEqual(got, want)) return 'invalid';
  return Number(expires) * 1000 <= nowMs ? 'expired' : 'ok';
}
