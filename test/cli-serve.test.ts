// `sluice serve` as operators start it: the front end chosen by --http,
// SLUICE_HTTP or the file (in that order), and `npm start` stopped by a SIGTERM
// to npm itself, leaving no sluice and no embedded Postgres behind.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, stopTestPostgres, type TestDatabase } from './helpers/pg.js';
import { runCli, spawnSluice, within } from './helpers/sluice-process.js';

after(stopTestPostgres);

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('the front end: --http, then SLUICE_HTTP, then server.http', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-cli-http-'));
  const cfg = join(dir, 'sluice.yaml');
  writeFileSync(cfg, 'server: { http: uws }\norganizations:\n  - { id: demo, models: [mock-echo] }\n');
  let db: TestDatabase;
  after(async () => { await db?.drop(); rmSync(dir, { recursive: true, force: true }); });

  const served = async (env: Record<string, string | undefined>, args: string[] = []) => {
    db ??= await createTestDatabase();
    const p = await spawnSluice(cfg, { DATABASE_URL: db.url, REDIS_URL: '', SLUICE_DATA_DIR: dir, ...env }, args);
    try {
      const line = p.log.map((l) => { try { return JSON.parse(l); } catch { return {}; } }).find((r) => r.msg === 'sluice listening');
      const health = await fetch(`${p.url}/healthz`);
      assert.equal(health.status, 200);
      return line.http as string;
    } finally {
      await p.stop();
    }
  };

  test('the file alone decides when neither is given', async () => {
    assert.equal(await served({ SLUICE_HTTP: undefined }), 'uws');
  });

  test('SLUICE_HTTP=node beats server.http', async () => {
    assert.equal(await served({ SLUICE_HTTP: 'node' }), 'node');
  });

  test('--http beats SLUICE_HTTP', async () => {
    assert.equal(await served({ SLUICE_HTTP: 'node' }, ['--http', 'uws']), 'uws');
  });

  test('an unknown SLUICE_HTTP is refused at start, naming the variable', async () => {
    const r = await runCli(['serve', '--config', cfg, '--port', '0'], { DATABASE_URL: 'postgres://unused@127.0.0.1:1/x', SLUICE_HTTP: 'nginx' });
    assert.equal(r.code, 2);
    assert.match(r.stdout + r.stderr, /SLUICE_HTTP must be one of auto, uws, node/);
  });

  test('a PORT that is no port is refused at start, naming the variable, as a setting in the file is', async () => {
    const r = await runCli(['serve', '--config', cfg], { DATABASE_URL: 'postgres://unused@127.0.0.1:1/x', PORT: 'abc' });
    assert.equal(r.code, 2);
    assert.match(r.stdout + r.stderr, /PORT must be an integer from 0 to 65535/);
  });
});

/** Every process whose command line mentions `needle`, from /proc (Linux). */
function processesMentioning(needle: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(needle)) pids.push(Number(name));
    } catch { /* gone meanwhile */ }
  }
  return pids;
}

describe('SIGTERM to `npm start`', () => {
  // `when` picks the log line that triggers the signal: once listening, or while the
  // gateways are still starting (the embedded Postgres is already up by then).
  async function stopsCleanly(when: (line: string) => boolean): Promise<void> {
    const dataDir = mkdtempSync(join(tmpdir(), 'sluice-npm-start-'));
    const env: NodeJS.ProcessEnv = { ...process.env, SLUICE_DATA_DIR: dataDir, LOG_LEVEL: 'info' };
    delete env.DATABASE_URL;
    delete env.REDIS_URL;
    // The exact `start` script; --ignore-scripts skips only `prestart` (the build, which the test run has done).
    const npm = spawn('npm', ['start', '--ignore-scripts', '--', '--port', '0'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const log: string[] = [];
    npm.stderr!.on('data', (d: Buffer) => log.push(d.toString()));
    const exited = once(npm, 'exit') as Promise<[number | null]>;
    try {
      await new Promise<void>((ok, fail) => {
        const t = setTimeout(() => fail(new Error(`npm start did not reach the signal point:\n${log.join('')}`)), 40_000);
        npm.once('exit', (code) => { clearTimeout(t); fail(new Error(`npm exited with ${code}:\n${log.join('')}`)); });
        createInterface({ input: npm.stdout! }).on('line', (line) => {
          log.push(line);
          if (when(line)) { clearTimeout(t); ok(); }
        });
      });
      assert.ok(processesMentioning(join(dataDir, 'pg')).length > 0, 'the embedded Postgres runs under the data dir');
      npm.kill('SIGTERM');
      const [code] = await exited;
      assert.equal(code, 0, log.join('\n'));
      assert.ok(log.some((l) => l.includes('"msg":"stopped"')), 'sluice drained and stopped');
      // Postgres's own children exit a moment after the postmaster.
      await within(10_000, async () => processesMentioning(dataDir).length === 0);
    } finally {
      try { process.kill(-npm.pid!, 'SIGKILL'); } catch { /* the group is gone: the expected case */ }
      for (const pid of processesMentioning(dataDir)) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
      rmSync(dataDir, { recursive: true, force: true });
    }
  }

  test('stops sluice and its embedded Postgres: no orphans', { timeout: 60_000 }, () =>
    stopsCleanly((line) => line.includes('"msg":"sluice listening"')));

  // The example config's demo provider warns from each gateway as it starts, before "listening".
  test('a SIGTERM while the gateways start waits for them, then drains: no orphans', { timeout: 60_000 }, () =>
    stopsCleanly((line) => line.includes('demo `mock` provider')));
});

test('a sluice killed outright leaves its embedded Postgres to the next start, which serves on it and stops it', { timeout: 90_000 }, async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-orphan-'));
  const cfg = join(ROOT, 'config/example.yaml');
  const env = { SLUICE_DATA_DIR: dataDir, DATABASE_URL: undefined, REDIS_URL: undefined };
  let second: Awaited<ReturnType<typeof spawnSluice>> | undefined;
  try {
    const first = await spawnSluice(cfg, env);
    first.child.kill('SIGKILL');
    await once(first.child, 'exit');
    assert.ok(processesMentioning(join(dataDir, 'pg')).length > 0, 'the killed sluice left its Postgres running');
    second = await spawnSluice(cfg, { ...env, LOG_LEVEL: 'debug' });
    assert.equal((await fetch(`${second.url}/healthz`)).status, 200);
    assert.ok(second.log.some((l) => l.includes('adopting the embedded Postgres')), 'the second start adopted the cluster');
    await second.stop();
    await within(15_000, async () => processesMentioning(dataDir).length === 0);
  } finally {
    // Whatever failed, nothing of this test may outlive it: a gateway left running holds the runner open.
    await second?.stop();
    for (const pid of processesMentioning(dataDir)) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    rmSync(dataDir, { recursive: true, force: true });
  }
});
