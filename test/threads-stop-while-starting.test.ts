// SIGTERM while gateway threads are still starting: the threads already
// serving drain, the rest are ended unstarted, and the process exits. It used
// to wait for every thread to start before it drained, which with many threads
// on few cores took minutes (or, with a hundred, for ever) while an
// orchestrator's stop went unheeded.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, stopTestPostgres } from './helpers/pg.js';
import { MAIN, within } from './helpers/sluice-process.js';

after(stopTestPostgres);

const freePort = () => new Promise<number>((ok) => {
  const s = createServer().listen(0, '127.0.0.1', () => { const { port } = s.address() as AddressInfo; s.close(() => ok(port)); });
});

for (const http of ['uws', 'node'] as const) {
  test(`SIGTERM while ${http === 'uws' ? 'threads' : 'gateway processes'} still start: the ready ones drain, the others end, and the process exits 0`, { timeout: 120_000 }, async () => {
    const db = await createTestDatabase();
    const dir = mkdtempSync(join(tmpdir(), 'sluice-stop-start-'));
    const port = await freePort();
    const config = join(dir, 'sluice.yaml');
    // Twelve gateways on two cores take seconds to start after the first answers.
    writeFileSync(config, JSON.stringify({ server: { threads: 12 }, organizations: [{ id: 'acme', models: ['mock-echo'] }] }));
    const child = spawn(process.execPath, [MAIN, 'serve', '--config', config, '--port', String(port)], {
      env: { ...process.env, DATABASE_URL: db.url, REDIS_URL: undefined, SLUICE_DATA_DIR: dir, SLUICE_HTTP: http, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let logs = '';
    child.stdout!.on('data', (d: Buffer) => { logs += d; });
    child.stderr!.on('data', (d: Buffer) => { logs += d; });
    const exited = new Promise<number | null>((ok) => child.once('exit', (code) => ok(code)));
    try {
      await within(60_000, async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.status === 200);
      assert.doesNotMatch(logs, /sluice listening/, 'the first gateway serves before the others are up');
      const signalled = Date.now();
      child.kill('SIGTERM');
      assert.equal(await exited, 0, logs);
      assert.ok(Date.now() - signalled < 20_000, `exited ${Date.now() - signalled} ms after SIGTERM`);
      assert.doesNotMatch(logs, /sluice listening/, 'the start was not waited for');
      assert.match(logs, /"msg":"stopped"/);
    } finally {
      if (child.exitCode === null) { child.kill('SIGKILL'); await exited; }
      await db.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
