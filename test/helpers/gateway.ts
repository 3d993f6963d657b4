// Starts a real gateway in-process on port 0, on a fresh database, with its
// upstreams pointed at mock servers. Every end-to-end test goes through this.
import pino, { type Logger } from 'pino';
import { startApp, type App } from '../../src/app.js';
import { buildConfig } from '../../src/config/load-config.js';
import type { ConfigInput } from '../../src/config/schema.js';
import type { TraceRecord, TraceSink } from '../../src/domain.js';
import type { HttpChoice } from '../../src/http/create-server.js';
import { createKey, ensureOrganizations, type KeyRole } from '../../src/store/api-keys-repo.js';
import { createTestDatabase, type TestDatabase } from './pg.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export class CapturingSink implements TraceSink {
  readonly rows: TraceRecord[] = [];
  private waiters: Array<() => void> = [];
  record(t: TraceRecord): void { this.rows.push(t); for (const w of this.waiters.splice(0)) w(); }
  /** Resolves with the trace of `requestId` once it is recorded. */
  async waitFor(requestId: string, timeoutMs = 2_000): Promise<TraceRecord> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.rows.find((r) => r.request_id === requestId);
      if (hit) return hit;
      if (Date.now() > deadline) throw new Error(`no trace for ${requestId}`);
      await new Promise<void>((ok) => { this.waiters.push(ok); setTimeout(ok, 20); });
    }
  }
}

export interface TestGateway {
  app: App;
  url: string;
  db: TestDatabase;
  traces: CapturingSink;
  key(org?: string, role?: KeyRole): Promise<string>;
  close(): Promise<void>;
}

export interface GatewayOptions {
  http?: HttpChoice;
  config: ConfigInput;
  env?: Record<string, string>;
  /** Use the real trace pipeline instead of the capturing sink. */
  realTraces?: boolean;
  /** Replaces the silent test logger (tests that read what the gateway logs). */
  logger?: Logger;
  /** Redis for the gateway (key cache, limits, pending responses); none by default. */
  redisUrl?: string;
  /** Another gateway's database, for two instances on one Postgres; that gateway drops it. */
  database?: TestDatabase;
}

// Tests that stop a gateway by hand (app.close() to watch a drain) skip close();
// their data directories go when the test process exits.
const dataDirs = new Set<string>();
process.once('exit', () => { for (const d of dataDirs) rmSync(d, { recursive: true, force: true }); });

export async function startGateway(opts: GatewayOptions): Promise<TestGateway> {
  for (const [k, v] of Object.entries(opts.env ?? {})) process.env[k] = v;
  const db = opts.database ?? await createTestDatabase();
  const traces = new CapturingSink();
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-data-'));
  dataDirs.add(dataDir);
  const app = await startApp({
    config: buildConfig(opts.config),
    databaseUrl: db.url,
    redisUrl: opts.redisUrl,
    dataDir,
    host: '127.0.0.1',
    port: 0,
    http: opts.http ?? 'auto',
    logger: opts.logger ?? pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    ...(opts.realTraces ? {} : { traceSink: traces }),
  });
  return {
    app,
    url: app.url,
    db,
    traces,
    async key(org = 'acme', role: KeyRole = 'admin') {
      await ensureOrganizations(app.services.pool, [org]);
      return (await createKey(app.services.pool, org, 'test', role)).key;
    },
    async close() {
      await app.close();
      if (!opts.database) await db.drop();
      rmSync(dataDir, { recursive: true, force: true });
      dataDirs.delete(dataDir);
    },
  };
}

/** Both front ends, so every end-to-end suite runs on uWS and on the node:http fallback. */
export const HTTP_KINDS: HttpChoice[] = ['uws', 'node'];
