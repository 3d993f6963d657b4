// API keys are 256 bits from the CSPRNG behind a recognisable prefix. Because
// they are machine-generated and uniformly random, a single SHA-256 is the right
// stored form: a slow password hash (bcrypt, argon2) defends low-entropy human
// passwords against guessing, which cannot succeed against 2^256 secrets, and
// would put milliseconds of CPU on every authenticated request.
import { createHash, hash, randomBytes } from 'node:crypto';

export const KEY_PREFIX = 'sk-sluice-';

export interface NewKeyMaterial {
  id: string;
  secret: string;
  prefix: string;
  hash: Buffer;
}

export function hashKey(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}

/**
 * The same digest as base64 text: the authenticator's cache key, with no Buffer allocated on a hit.
 * One-shot `hash()` makes no Hash object: a third of createHash's cost, on every authenticated request.
 */
export function hashKeyBase64(secret: string): string {
  return hash('sha256', secret, 'base64');
}

export function newKeyMaterial(): NewKeyMaterial {
  const secret = KEY_PREFIX + randomBytes(32).toString('base64url');
  return {
    id: `key_${randomBytes(12).toString('base64url')}`,
    secret,
    // Enough of the random part to tell keys apart in a listing, far too little to guess the rest.
    prefix: secret.slice(0, KEY_PREFIX.length + 6),
    hash: hashKey(secret),
  };
}

/** The token from `Authorization: Bearer <key>`, or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header || header.length < 8) return undefined;
  if (header.charCodeAt(6) !== 32 || header.slice(0, 6).toLowerCase() !== 'bearer') return undefined;
  const token = header.slice(7).trim();
  return token || undefined;
}
