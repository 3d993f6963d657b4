// Resolves a bearer key to its record. The hot path is a hash plus an in-process
// LRU hit, returned synchronously. Misses go through the slower lookup chain
// (Redis, then Postgres) with concurrent misses for one key coalesced. Entries
// live `ttlMs` at most, so a revocation missed by every other signal still takes
// effect within that bound; `invalidate` drops an entry at once.
import { LRUCache } from 'lru-cache';
import { GatewayError } from '../errors.js';
import type { KeyRecord } from '../store/api-keys-repo.js';
import { bearerToken, hashKeyBase64 } from './key-format.js';

/** The slower tiers behind the LRU. Resolves null for an unknown or revoked key. */
export interface KeyLookup {
  lookup(hash: Buffer): Promise<KeyRecord | null>;
}

const UNKNOWN = Symbol('unknown');
type Cached = KeyRecord | typeof UNKNOWN;

export interface AuthenticatorOptions {
  ttlMs: number;
  maxEntries: number;
  /** Called with the ids and times of keys used since the last flush. */
  flushLastUsed: (seen: ReadonlyMap<string, number>) => Promise<void>;
  flushEveryMs: number;
  onFlushError?: (err: unknown) => void;
}

export class Authenticator {
  private readonly cache: LRUCache<string, Cached>;
  private readonly inflight = new Map<string, Promise<KeyRecord | null>>();
  private lastUsed = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly tiers: KeyLookup, private readonly opts: AuthenticatorOptions) {
    this.cache = new LRUCache<string, Cached>({ max: opts.maxEntries, ttl: opts.ttlMs, ttlAutopurge: false });
    this.timer = setInterval(() => { void this.flush(); }, opts.flushEveryMs);
    this.timer.unref();
  }

  /** A record, or a promise of one on a cache miss. Throws/rejects GatewayError('unauthorized'). */
  authenticate(authorization: string | undefined): KeyRecord | Promise<KeyRecord> {
    const token = bearerToken(authorization);
    if (!token) throw new GatewayError('unauthorized', 'Missing bearer token: send Authorization: Bearer <key>.');
    const id = hashKeyBase64(token);
    const hit = this.cache.get(id);
    if (hit !== undefined) return this.accept(hit);
    return this.miss(id, Buffer.from(id, 'base64')).then((rec) => this.accept(rec ?? UNKNOWN));
  }

  /** Drops a key (by its digest) from this instance's cache at once. */
  invalidate(hash: Buffer): void {
    this.cache.delete(hash.toString('base64'));
  }

  /** Writes out last_used_at for the keys seen since the previous flush. */
  async flush(): Promise<void> {
    if (!this.lastUsed.size) return;
    const seen = this.lastUsed;
    this.lastUsed = new Map();
    try {
      await this.opts.flushLastUsed(seen);
    } catch (err) {
      // Keep the newest time per key for the next attempt; last_used_at is advisory, never worth failing a request.
      for (const [k, t] of seen) if ((this.lastUsed.get(k) ?? 0) < t) this.lastUsed.set(k, t);
      this.opts.onFlushError?.(err);
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  private accept(rec: Cached): KeyRecord {
    if (rec === UNKNOWN) throw new GatewayError('unauthorized', 'Invalid or revoked API key.');
    this.lastUsed.set(rec.id, Date.now());
    return rec;
  }

  private miss(id: string, hash: Buffer): Promise<KeyRecord | null> {
    let p = this.inflight.get(id);
    if (!p) {
      p = this.tiers.lookup(hash).then(
        (rec) => { this.inflight.delete(id); this.cache.set(id, rec ?? UNKNOWN); return rec; },
        (err) => { this.inflight.delete(id); throw new GatewayError('auth_unavailable', undefined, { cause: err }); },
      );
      this.inflight.set(id, p);
    }
    return p;
  }
}
