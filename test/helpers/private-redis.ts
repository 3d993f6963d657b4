// A throwaway redis-server on a free port, so that a test may kill and restart
// it without disturbing the shared Redis other suites use.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';

export interface PrivateRedis {
  url: string;
  port: number;
  /** SIGKILL: no goodbye to clients, and with no persistence every entry is lost. */
  kill(): Promise<void>;
  /** Starts a fresh server on the same port. */
  restart(): Promise<void>;
}

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((ok) => srv.listen(0, '127.0.0.1', ok));
  const { port } = srv.address() as { port: number };
  await new Promise<void>((ok) => srv.close(() => ok()));
  return port;
}

async function launch(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  probe.on('error', () => { /* refused until the server listens */ });
  try {
    for (let i = 0; i < 100; i++) {
      if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
      try { await probe.connect(); await probe.ping(); return child; } catch { probe.disconnect(); }
      await new Promise((ok) => setTimeout(ok, 50));
    }
    throw new Error('redis-server did not start');
  } finally {
    probe.disconnect();
  }
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined = await launch(port);
  async function kill(): Promise<void> {
    if (!child || child.exitCode !== null) return;
    const c = child;
    child = undefined;
    c.kill('SIGKILL');
    await once(c, 'exit');
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    kill,
    async restart() {
      await kill();
      child = await launch(port);
    },
  };
}
