// Payload links: HMAC-signed, expiring, and refused when altered in any part.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { signPayloadUrl, verifyPayloadSignature } from '../src/traces/signed-url.js';
import { resolvePayloadSecret } from '../src/traces/config-schema.js';
import { traceSettings } from './helpers/trace-fixtures.js';

const secret = 'k'.repeat(40);
const now = Date.parse('2026-11-22T03:00:00Z');

function parts(url: string): { id: string; expires: string | null; sig: string | null } {
  const u = new URL(url);
  return { id: decodeURIComponent(u.pathname.split('/').at(-1) ?? ''), expires: u.searchParams.get('expires'), sig: u.searchParams.get('sig') };
}

test('a fresh link verifies, and has the documented shape', () => {
  const url = signPayloadUrl('https://gw.example/', 'req_1', secret, undefined, now);
  assert.match(url, /^https:\/\/gw\.example\/v1\/payloads\/req_1\?expires=\d+&sig=[\w-]+$/);
  const p = parts(url);
  assert.equal(Number(p.expires), now / 1000 + 300, 'default TTL is 5 minutes');
  assert.equal(verifyPayloadSignature(p.id, p.expires, p.sig, secret, now + 299_000), 'ok');
});

test('a link is expired at its expiry time', () => {
  const p = parts(signPayloadUrl('https://gw.example', 'req_1', secret, 60, now));
  assert.equal(verifyPayloadSignature(p.id, p.expires, p.sig, secret, now + 60_000), 'expired');
});

test('a link lives at least its TTL, whenever in the second it was minted', () => {
  const late = now + 999;
  const p = parts(signPayloadUrl('https://gw.example', 'req_1', secret, 60, late));
  assert.equal(verifyPayloadSignature(p.id, p.expires, p.sig, secret, late + 59_999), 'ok');
  assert.equal(verifyPayloadSignature(p.id, p.expires, p.sig, secret, late + 60_001), 'expired');
});

test('tampering with the id, the expiry, the signature or the secret is invalid', () => {
  const p = parts(signPayloadUrl('https://gw.example', 'req_1', secret, 60, now));
  assert.equal(verifyPayloadSignature('req_2', p.expires, p.sig, secret, now), 'invalid');
  assert.equal(verifyPayloadSignature(p.id, String(Number(p.expires) + 3600), p.sig, secret, now), 'invalid');
  const flipped = (p.sig ?? '').replace(/^./, (c) => (c === 'A' ? 'B' : 'A'));
  assert.equal(verifyPayloadSignature(p.id, p.expires, flipped, secret, now), 'invalid');
  assert.equal(verifyPayloadSignature(p.id, p.expires, `${p.sig}x`, secret, now), 'invalid');
  assert.equal(verifyPayloadSignature(p.id, p.expires, p.sig, 'z'.repeat(40), now), 'invalid');
  assert.equal(verifyPayloadSignature(p.id, null, p.sig, secret, now), 'invalid');
  assert.equal(verifyPayloadSignature(p.id, '-1', p.sig, secret, now), 'invalid');
  // An expired link with a forged later expiry must not read as merely expired.
  assert.equal(verifyPayloadSignature(p.id, String(Number(p.expires) + 1), p.sig, secret, now + 3_600_000), 'invalid');
});

test('payload storage without a secret is a startup error naming the variable', () => {
  const s = traceSettings({ payload_url: { secret_env: 'MY_TRACE_SECRET' } });
  assert.throws(() => resolvePayloadSecret(s, {}, true), /MY_TRACE_SECRET is not set/);
  assert.throws(() => resolvePayloadSecret(s, { MY_TRACE_SECRET: 'short' }, true), /at least 32/);
  assert.equal(resolvePayloadSecret(s, { MY_TRACE_SECRET: secret }, true), secret);
  assert.equal(resolvePayloadSecret(s, {}, false), undefined);
  assert.equal(s.payload_url.ttl_seconds, 300);
  assert.throws(() => traceSettings({ batch_size: 0 }), /batch_size/);
  assert.throws(() => traceSettings({ spool_fsync: 'sometimes' }), /spool_fsync/);
});
