// The conversation state of the Responses API in Postgres. Writes happen after
// the reply has gone out, fire and forget (a failure is logged, never the
// caller's), so a client that chains at once may ask before the row is there.
// On this instance a read first waits for its own pending write. For every
// other instance, the id is marked pending in Redis before the reply goes out
// (one SET with a short TTL); a read that misses in Postgres while the marker
// is there polls until the row lands, the marker goes or its TTL runs out.
// Without Redis only the instance that answered waits: several instances need
// Redis for an immediate previous_response_id. Only previous_response_id,
// item_reference, GET and DELETE read.
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type pg from 'pg';
import { responseIdOfItem } from './chat-to-response.js';
import type { ResponsesSettings } from './config-schema.js';
import type { Item, ResponseObject } from './types.js';

export interface StoredResponse {
  id: string;
  provider: string;
  native: boolean;
  previous_response_id: string | null;
  input: Item[];
  response: ResponseObject;
  /** Read by get() only: the model that answered, and where a native upstream's copy lives (null when unknown). */
  model?: string;
  upstream_base_url?: string | null;
}

export interface SaveRow {
  id: string;
  organization_id: string;
  provider: string;
  model: string;
  native: boolean;
  /** Native rows: the provider's base URL, where the upstream's own copy is (DELETE forwards there). */
  upstream_base_url: string | undefined;
  previous_response_id: string | undefined;
  input: Item[];
  response: ResponseObject;
  created_at: number;
}

/** Longest id a lookup considers; ours and OpenAI's are far shorter. */
const MAX_ID_LENGTH = 256;

/**
 * An id that can name a stored row. Postgres refuses NUL in text outright (a
 * 500 the bad-input table found), so such an id names nothing and never
 * reaches a query.
 */
const lookable = (id: string): boolean => id.length > 0 && id.length <= MAX_ID_LENGTH && !id.includes('\0');

/** The ids of a row's items, input and output: what findItems looks an item up by. */
function itemIds(row: SaveRow): string[] {
  const ids: string[] = [];
  for (const it of [...row.input, ...row.response.output]) if (typeof it?.id === 'string' && lookable(it.id)) ids.push(it.id);
  return ids;
}

/** Longest conversation a chain read follows. */
const MAX_CHAIN = 1000;
/** How long a pending marker lives, and so the longest a read on another instance waits for a write. */
export const PENDING_MS = 5_000;
/** Between polls of a read that waits: short at first, since most writes land within milliseconds. */
const pollDelay = (attempt: number) => Math.min(100, 5 * 2 ** attempt);
const sleep = (ms: number) => new Promise<void>((ok) => setTimeout(ok, ms));

/** A read's outcome: what it found, or the id of the response it missed (the asked one, or a link of its chain). */
interface Attempt<T> { value?: T; missing?: string }

export class ResponseStore {
  private readonly pending = new Map<string, Promise<void>>();
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly pool: pg.Pool,
    private readonly settings: ResponsesSettings,
    private readonly log: Logger,
    private readonly redis?: { client: Redis; prefix: string },
  ) {}

  private markerKey(id: string): string { return `${this.redis!.prefix}response-pending:${id}`; }

  /**
   * Marks `id` as about to be stored, for reads on other instances; awaited
   * before the reply goes out, so the marker is there before a client can
   * chain. A Redis that fails (it fails fast) only loses that wait.
   */
  async markPending(org: string, id: string): Promise<void> {
    if (!this.redis) return;
    await this.redis.client.set(this.markerKey(id), org, 'PX', PENDING_MS).catch((err: unknown) => {
      this.log.debug({ err, response_id: id }, 'marking a response pending failed');
    });
  }

  /** Drops the marker of a row that will not land (or is gone), so no read waits for it. */
  private unmark(id: string): void {
    if (!this.redis) return;
    this.redis.client.del(this.markerKey(id)).catch(() => { /* it expires on its own */ });
  }

  private async pendingFor(org: string, id: string): Promise<boolean> {
    if (!this.redis) return false;
    try { return (await this.redis.client.get(this.markerKey(id))) === org; } catch { return false; }
  }

  /** Runs `attempt` again while what it missed is marked pending for `org`, within the marker's lifetime. */
  private async untilLanded<T>(org: string, attempt: () => Promise<Attempt<T>>): Promise<T | undefined> {
    const deadline = Date.now() + PENDING_MS;
    for (let i = 0; ; i++) {
      const r = await attempt();
      if (r.value !== undefined || r.missing === undefined) return r.value;
      if (Date.now() >= deadline || !(await this.pendingFor(org, r.missing))) return undefined;
      await sleep(pollDelay(i));
    }
  }

  /** Stores the row unless it exceeds max_stored_bytes; false then. Never throws, never awaited by a request. */
  save(row: SaveRow): boolean {
    const input = JSON.stringify(row.input);
    const response = JSON.stringify(row.response);
    const bytes = Buffer.byteLength(input) + Buffer.byteLength(response);
    if (bytes > this.settings.max_stored_bytes) {
      this.log.info({ response_id: row.id, bytes, max: this.settings.max_stored_bytes }, 'response not stored: over responses.max_stored_bytes');
      this.unmark(row.id);
      return false;
    }
    const expires = row.created_at + this.settings.retention_days * 86_400_000;
    const write: Promise<void> = this.pool.query(
      `INSERT INTO responses (id, organization_id, provider, model, native, previous_response_id, input, response, created_at, expires_at, item_ids, upstream_base_url)
       VALUES ($1, $2, $3, $4, $5, $6, $7::json, $8::json, to_timestamp($9 / 1000.0), to_timestamp($10 / 1000.0), $11, $12)
       ON CONFLICT (id) DO UPDATE SET input = EXCLUDED.input, response = EXCLUDED.response, item_ids = EXCLUDED.item_ids
       WHERE responses.organization_id = EXCLUDED.organization_id`,
      [row.id, row.organization_id, row.provider, row.model, row.native, row.previous_response_id ?? null, input, response, row.created_at, expires, itemIds(row), row.upstream_base_url ?? null],
    ).then((r) => {
      // Native ids are the upstream's: another organisation's row under the same id is never overwritten.
      if (r.rowCount !== 0) return;
      this.log.warn({ response_id: row.id, organization_id: row.organization_id }, 'response not stored: its id is stored for another organisation');
      this.unmark(row.id);
    }, (err: unknown) => {
      this.log.error({ err, response_id: row.id }, 'storing a response failed');
      this.unmark(row.id);
    })
      .finally(() => { if (this.pending.get(row.id) === write) this.pending.delete(row.id); });
    this.pending.set(row.id, write);
    return true;
  }

  private async settled(id: string): Promise<void> {
    await this.pending.get(id);
  }

  async get(org: string, id: string): Promise<StoredResponse | undefined> {
    if (!lookable(id)) return undefined;
    await this.settled(id);
    return this.untilLanded(org, async () => {
      const r = await this.pool.query<StoredResponse>(
        `SELECT id, provider, model, native, upstream_base_url, previous_response_id, input, response FROM responses
         WHERE id = $1 AND organization_id = $2 AND expires_at > now()`, [id, org]);
      return r.rows[0] ? { value: r.rows[0] } : { missing: id };
    });
  }

  /**
   * This organisation's stored items among `itemIds`, by id, each with the
   * response that holds it. An id of ours names its response; the others (an
   * upstream's native ids) are looked up by the items' ids in one query,
   * after this instance's pending writes (another instance's land within
   * milliseconds, unwaited).
   */
  async findItems(org: string, itemIds: readonly string[]): Promise<Map<string, { row: StoredResponse; item: Item }>> {
    const found = new Map<string, { row: StoredResponse; item: Item }>();
    const ids = new Set(itemIds.filter(lookable));
    const rows: StoredResponse[] = [];
    for (const respId of new Set([...ids].map(responseIdOfItem))) {
      const row = respId === undefined ? undefined : await this.get(org, respId);
      if (row) rows.push(row);
    }
    const others = [...ids].filter((id) => responseIdOfItem(id) === undefined);
    if (others.length > 0) {
      await Promise.all(this.pending.values());
      const r = await this.pool.query<StoredResponse>(
        `SELECT id, provider, native, previous_response_id, input, response FROM responses
         WHERE item_ids && $1::text[] AND organization_id = $2 AND expires_at > now() ORDER BY created_at`, [others, org]);
      rows.push(...r.rows);
    }
    for (const row of rows) {
      for (const item of [...row.input, ...row.response.output]) if (typeof item.id === 'string' && ids.has(item.id)) found.set(item.id, { row, item });
    }
    return found;
  }

  /** The conversation ending with `id`, oldest first; undefined when `id` (or a link of its chain) is unknown or expired. */
  async chain(org: string, id: string): Promise<StoredResponse[] | undefined> {
    if (!lookable(id)) return undefined;
    await this.settled(id);
    return this.untilLanded(org, () => this.chainOnce(org, id));
  }

  private async chainOnce(org: string, id: string): Promise<Attempt<StoredResponse[]>> {
    const r = await this.pool.query<StoredResponse & { depth: number }>(
      `WITH RECURSIVE chain AS (
         SELECT id, provider, native, previous_response_id, input, response, 0 AS depth
         FROM responses WHERE id = $1 AND organization_id = $2 AND expires_at > now()
         UNION ALL
         SELECT r.id, r.provider, r.native, r.previous_response_id, r.input, r.response, c.depth + 1
         FROM responses r JOIN chain c ON r.id = c.previous_response_id
         WHERE r.organization_id = $2 AND r.expires_at > now() AND c.depth < $3
       ) SELECT * FROM chain ORDER BY depth DESC`, [id, org, MAX_CHAIN]);
    const rows = r.rows;
    if (!rows.length) return { missing: id };
    if (rows[0]!.previous_response_id) return { missing: rows[0]!.previous_response_id };
    return { value: rows };
  }

  async delete(org: string, id: string): Promise<StoredResponse | undefined> {
    if (!lookable(id)) return undefined;
    await this.settled(id);
    const row = await this.untilLanded(org, async () => {
      const r = await this.pool.query<StoredResponse>(
        'DELETE FROM responses WHERE id = $1 AND organization_id = $2 AND expires_at > now() RETURNING id, provider, native', [id, org]);
      return r.rows[0] ? { value: r.rows[0] } : { missing: id };
    });
    // Gone for good: a read elsewhere must not wait for it.
    if (row) this.unmark(id);
    return row;
  }

  /** Deletes expired rows; returns how many. */
  async sweep(): Promise<number> {
    const r = await this.pool.query('DELETE FROM responses WHERE expires_at <= now()');
    return r.rowCount ?? 0;
  }

  start(): void {
    const run = () => { this.sweep().catch((err: unknown) => this.log.warn({ err }, 'sweeping expired responses failed')); };
    run();
    this.sweeper = setInterval(run, this.settings.sweep_interval_ms);
    this.sweeper.unref();
  }

  /** Stops the sweeper and lets pending writes finish (app close, before the pool ends). */
  async close(): Promise<void> {
    clearInterval(this.sweeper);
    await Promise.all([...this.pending.values()]);
  }
}
