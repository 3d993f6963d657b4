// Resolves a bearer key to its record. The hot path is a hash plus an in-process
// LRU hit, returned synchronously. Misses go through the slower lookup chain
// (Redis, then Postgres) with concurrent misses for one key coalesced.
//
// A key in use is refreshed ahead of time: a hit in the second half of its
// freshness answers at once and starts the lookup in the background, so the
// entry is renewed before it expires and no request of a busy key waits for
// Redis or Postgres. Only a key idle for half its TTL waits, once.
//
// An entry is fresh for `ttlMs`, so a revocation missed by every other signal
// still takes effect within that bound while the system of record answers. A
// valid record is then kept, stale, for `staleIfErrorMs` more: it is served only
// when the lookup chain fails (Postgres down), never instead of an answer. An
// unknown key is remembered for `ttlMs` only and never served stale. A revoked
// key leaves a tombstone for the whole stale horizon, so no stale copy of it
// (in process, or an in-flight lookup that read it just before the revocation)
// can come back.
import { LRUCache } from 'lru-cache';
import { GatewayError } from '../errors.js';
import type { KeyRecord } from '../store/api-keys-repo.js';
import { bearerToken, hashKeyBase64 } from './key-format.js';

/** The slower tiers behind the LRU. Resolves null for an unknown or revoked key; rejects when no tier could answer. */
export interface KeyLookup {
  lookup(hash: Buffer): Promise<KeyRecord | null>;
}

/**
 * A tier that could not reach the system of record but holds an older copy
 * (Redis) rejects with this: the caller decides whether a stale answer may be used.
 */
export class StaleKeyRecord extends Error {
  readonly code = 'stale_key_record';
  constructor(readonly record: KeyRecord, options: { cause: unknown }) {
    super('the system of record is unreachable; a stale cached record is available', options);
  }
}

const UNKNOWN = Symbol('unknown');
const REVOKED = Symbol('revoked');
const SLOW = Symbol('slow');
interface Known { rec: KeyRecord; freshUntil: number }
type Cached = Known | typeof UNKNOWN | typeof REVOKED;

/** How long a stale hit waits for a refresh before answering from the stale copy (a black-holed Postgres). */
const STALE_WAIT_MS = 250;
/** While the lookup chain is failing, stale hits answer at once and one refresh per key is tried this often. */
const PROBE_EVERY_MS = 1_000;

export interface AuthenticatorOptions {
  ttlMs: number;
  /** How long past `ttlMs` a known-valid record may still be served while lookups fail. 0 turns it off. */
  staleIfErrorMs?: number;
  maxEntries: number;
  /** Called with the ids and times of keys used since the last flush. */
  flushLastUsed: (seen: ReadonlyMap<string, number>) => Promise<void>;
  flushEveryMs: number;
  onFlushError?: (err: unknown) => void;
  /** Called once when lookups start failing and stale records are served, and once when they recover. */
  onOutage?: (down: boolean, err?: unknown) => void;
}

export class Authenticator {
  private readonly cache: LRUCache<string, Cached>;
  private readonly inflight = new Map<string, Promise<KeyRecord | null>>();
  private lastUsed = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;
  private readonly staleMs: number;
  /** A hit with less freshness left than this starts a background refresh. */
  private readonly refreshAheadMs: number;
  /** True after a lookup failed, until one succeeds. */
  private down = false;
  private readonly probedAt = new Map<string, number>();
  /** Stale records served since start: the outage metric. */
  staleServed = 0;
  /**
   * Each valid key's digest by its token: a SHA-256 is about 5k instructions, the
   * most of any step of authenticating a request, and a lookup here 0.3k. Only a
   * token whose key the cache holds as valid is remembered, so made-up tokens
   * neither fill it nor skip their hash. The digest is only a name: whether the
   * key is valid, revoked or stale is still the cache's answer on every request.
   * It holds secrets the process sees on every request anyway, in a bounded
   * map that is emptied when full.
   */
  private readonly digests = new Map<string, string>();

  constructor(private readonly tiers: KeyLookup, private readonly opts: AuthenticatorOptions) {
    this.staleMs = opts.staleIfErrorMs ?? 0;
    this.refreshAheadMs = opts.ttlMs / 2;
    // Bounded by size, one a key, not by `max`: lru-cache allocates `max` entries' storage up front, about
    // 4.3 MB per gateway thread at the default 100,000 however few keys are in use. A lookup costs ~6 ns more.
    // ttlResolution 0: its default (1 ms) caches the clock behind a timer armed at the first lookup of each
    // millisecond, which at a request every few milliseconds is a timer per request; the clock read is cheaper.
    this.cache = new LRUCache<string, Cached>({ maxSize: opts.maxEntries, sizeCalculation: () => 1, ttl: opts.ttlMs + this.staleMs, ttlAutopurge: false, ttlResolution: 0 });
    this.timer = setInterval(() => { void this.flush(); }, opts.flushEveryMs);
    this.timer.unref();
  }

  /** A record, or a promise of one on a cache miss. Throws/rejects GatewayError('unauthorized'). */
  authenticate(authorization: string | undefined): KeyRecord | Promise<KeyRecord> {
    const token = bearerToken(authorization);
    if (!token) throw new GatewayError('unauthorized', 'Missing bearer token: send Authorization: Bearer <key>.');
    const known = this.digests.get(token);
    const id = known ?? hashKeyBase64(token);
    const hit = this.cache.get(id);
    if (hit === undefined) return this.miss(id).then((rec) => this.accept(rec));
    if (typeof hit === 'symbol') throw new GatewayError('unauthorized', 'Invalid or revoked API key.');
    if (known === undefined) this.rememberDigest(token, id);
    const now = performance.now();
    if (hit.freshUntil > now) {
      if (hit.freshUntil - now < this.refreshAheadMs) this.refreshAhead(id);
      return this.accept(hit.rec);
    }
    return this.stale(id, hit.rec, now);
  }

  /**
   * Drops a revoked key (by its digest) from this instance at once. The tombstone
   * outlives any stale copy, so the key is refused with 401 even during an outage.
   */
  invalidate(hash: Buffer): void {
    const id = hash.toString('base64');
    this.cache.set(id, REVOKED, { ttl: this.opts.ttlMs + this.staleMs });
  }

  /** Drops a key whose record changed (its role) from this instance, so that its next request reads it afresh. */
  forget(hash: Buffer): void {
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

  private rememberDigest(token: string, id: string): void {
    if (this.digests.size >= this.opts.maxEntries) this.digests.clear();
    this.digests.set(token, id);
  }

  private accept(rec: KeyRecord | null): KeyRecord {
    if (!rec) throw new GatewayError('unauthorized', 'Invalid or revoked API key.');
    this.lastUsed.set(rec.id, Date.now());
    return rec;
  }

  /**
   * A known key past its freshness. While lookups succeed, the caller waits for
   * the refresh (a revoked key must be refused). While they fail, the stale copy
   * answers at once and a refresh is probed now and then in the background.
   */
  private stale(id: string, rec: KeyRecord, now: number): KeyRecord | Promise<KeyRecord> {
    if (this.staleMs === 0) return this.miss(id).then((r) => this.accept(r));
    if (this.down) {
      if ((this.probedAt.get(id) ?? 0) + PROBE_EVERY_MS <= now) {
        this.probedAt.set(id, now);
        this.miss(id).catch(() => { /* still down: the stale copy keeps answering */ });
      }
      this.staleServed++;
      return this.accept(rec);
    }
    const refreshed = this.miss(id);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<typeof SLOW>((ok) => { timer = setTimeout(ok, STALE_WAIT_MS, SLOW); });
    return Promise.race([refreshed, late]).then((r) => {
      clearTimeout(timer);
      if (r !== SLOW) return this.accept(r);
      // Too slow to be healthy: answer from the stale copy and treat the chain as down until a lookup succeeds.
      refreshed.catch(() => {});
      this.markDown(new Error(`key lookup took longer than ${STALE_WAIT_MS} ms`));
      return this.fallback(id, undefined);
    }, (err: unknown) => { clearTimeout(timer); return this.fallback(id, err); });
  }

  /**
   * The entry is still fresh and keeps answering: the lookup only renews it (or
   * records the key's revocation). While the chain is down the stale-probe rule
   * in stale() paces lookups instead, so a failing tier is not asked per request.
   */
  private refreshAhead(id: string): void {
    if (this.down) return;
    // miss() coalesces: a lookup already out for this key is the refresh.
    this.miss(id).catch(() => { /* failed() has marked the chain down; the fresh entry still answers */ });
  }

  /** The stale copy still in the cache (a revocation replaces it with a tombstone), or 503. */
  private fallback(id: string, err: unknown): KeyRecord {
    const cur = this.cache.get(id);
    if (cur === REVOKED || cur === UNKNOWN) throw new GatewayError('unauthorized', 'Invalid or revoked API key.');
    if (cur === undefined) throw err instanceof GatewayError ? err : new GatewayError('auth_unavailable', undefined, { cause: err });
    this.staleServed++;
    return this.accept(cur.rec);
  }

  private miss(id: string): Promise<KeyRecord | null> {
    let p = this.inflight.get(id);
    if (!p) {
      p = this.tiers.lookup(Buffer.from(id, 'base64')).then(
        (rec) => { this.inflight.delete(id); this.recovered(); return this.store(id, rec); },
        (err: unknown) => { this.inflight.delete(id); return this.failed(id, err); },
      );
      this.inflight.set(id, p);
    }
    return p;
  }

  private store(id: string, rec: KeyRecord | null): KeyRecord | null {
    // A revocation that landed while this lookup was in flight wins over what the lookup read.
    if (this.cache.peek(id) === REVOKED) return null;
    if (rec) this.cache.set(id, { rec, freshUntil: performance.now() + this.opts.ttlMs });
    else this.cache.set(id, UNKNOWN, { ttl: this.opts.ttlMs });
    return rec;
  }

  private failed(id: string, err: unknown): KeyRecord | null {
    this.markDown(err);
    const cur = this.cache.peek(id);
    if (cur === REVOKED) return null;
    if (this.staleMs > 0) {
      if (typeof cur === 'object') {
        // A refresh ahead that failed serves nothing stale: the entry is still fresh.
        if (cur.freshUntil <= performance.now()) this.staleServed++;
        return cur.rec;
      }
      // Never seen here, but another instance cached it in Redis: keep it as stale (not fresh) from now on.
      if (err instanceof StaleKeyRecord) {
        this.cache.set(id, { rec: err.record, freshUntil: 0 });
        this.staleServed++;
        return err.record;
      }
    }
    throw new GatewayError('auth_unavailable', undefined, { cause: err instanceof StaleKeyRecord ? err.cause : err });
  }

  private markDown(err: unknown): void {
    if (this.down) return;
    this.down = true;
    this.opts.onOutage?.(true, err);
  }

  private recovered(): void {
    if (!this.down) return;
    this.down = false;
    this.probedAt.clear();
    this.opts.onOutage?.(false);
  }
}
