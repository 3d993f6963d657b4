// The conversation state of the Responses API in Postgres. Writes happen after
// the reply has gone out, fire and forget (a failure is logged, never the
// caller's); a read of the same id on this instance first waits for its
// pending write, so a client that chains at once still finds its response.
// Only previous_response_id, item_reference, GET and DELETE read.
import type { Logger } from 'pino';
import type pg from 'pg';
import type { ResponsesSettings } from './config-schema.js';
import type { Item, ResponseObject } from './types.js';

export interface StoredResponse {
  id: string;
  provider: string;
  native: boolean;
  previous_response_id: string | null;
  input: Item[];
  response: ResponseObject;
}

export interface SaveRow {
  id: string;
  organization_id: string;
  provider: string;
  model: string;
  native: boolean;
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

/** Longest conversation a chain read follows. */
const MAX_CHAIN = 1000;

export class ResponseStore {
  private readonly pending = new Map<string, Promise<void>>();
  private sweeper: NodeJS.Timeout | undefined;

  constructor(private readonly pool: pg.Pool, private readonly settings: ResponsesSettings, private readonly log: Logger) {}

  /** Stores the row unless it exceeds max_stored_bytes; false then. Never throws, never awaited by a request. */
  save(row: SaveRow): boolean {
    const input = JSON.stringify(row.input);
    const response = JSON.stringify(row.response);
    const bytes = Buffer.byteLength(input) + Buffer.byteLength(response);
    if (bytes > this.settings.max_stored_bytes) {
      this.log.info({ response_id: row.id, bytes, max: this.settings.max_stored_bytes }, 'response not stored: over responses.max_stored_bytes');
      return false;
    }
    const expires = row.created_at + this.settings.retention_days * 86_400_000;
    const write: Promise<void> = this.pool.query(
      `INSERT INTO responses (id, organization_id, provider, model, native, previous_response_id, input, response, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8::jsonb, to_timestamp($9 / 1000.0), to_timestamp($10 / 1000.0))
       ON CONFLICT (id) DO UPDATE SET input = EXCLUDED.input, response = EXCLUDED.response
       WHERE responses.organization_id = EXCLUDED.organization_id`,
      [row.id, row.organization_id, row.provider, row.model, row.native, row.previous_response_id ?? null, input, response, row.created_at, expires],
    ).then((r) => {
      // Native ids are the upstream's: another organisation's row under the same id is never overwritten.
      if (r.rowCount === 0) this.log.warn({ response_id: row.id, organization_id: row.organization_id }, 'response not stored: its id is stored for another organisation');
    }, (err: unknown) => { this.log.error({ err, response_id: row.id }, 'storing a response failed'); })
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
    const r = await this.pool.query<StoredResponse>(
      `SELECT id, provider, native, previous_response_id, input, response FROM responses
       WHERE id = $1 AND organization_id = $2 AND expires_at > now()`, [id, org]);
    return r.rows[0];
  }

  /** The conversation ending with `id`, oldest first; undefined when `id` (or a link of its chain) is unknown or expired. */
  async chain(org: string, id: string): Promise<StoredResponse[] | undefined> {
    if (!lookable(id)) return undefined;
    await this.settled(id);
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
    if (!rows.length || rows[0]!.previous_response_id) return undefined;
    return rows;
  }

  async delete(org: string, id: string): Promise<StoredResponse | undefined> {
    if (!lookable(id)) return undefined;
    await this.settled(id);
    const r = await this.pool.query<StoredResponse>(
      'DELETE FROM responses WHERE id = $1 AND organization_id = $2 AND expires_at > now() RETURNING id, provider, native', [id, org]);
    return r.rows[0];
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
