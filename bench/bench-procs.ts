// Starts bench/load-servers.ts children (the mock upstream, sluice) for the
// outage and soak benches, and asks them for their RSS.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const SERVERS = fileURLToPath(new URL('./load-servers.js', import.meta.url));

export interface BenchProc { proc: ChildProcess; url: string; key: string; keyId: string }

export function startServer(kind: 'mock' | 'sluice', upstream = '', env: Record<string, string | undefined> = {}): Promise<BenchProc> {
  const proc = fork(SERVERS, [kind, upstream], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env: { ...process.env, ...env } });
  return new Promise((ok, fail) => {
    proc.once('message', (m: any) => ok({ proc, url: `http://127.0.0.1:${m.ready.port}`, key: m.ready.key ?? '', keyId: m.ready.keyId ?? '' }));
    proc.once('exit', (code) => fail(new Error(`${kind} exited with ${code}`)));
  });
}

export function rssOf(proc: ChildProcess): Promise<number> {
  return new Promise((ok) => {
    const on = (m: any) => { if (typeof m?.rss === 'number') { proc.off('message', on); ok(m.rss); } };
    proc.on('message', on);
    proc.send({ cmd: 'rss' });
  });
}

/** sluice closes gracefully on disconnect (flushing its traces); the mock is simply killed. */
export function stopServer(p: ChildProcess, graceful: boolean): Promise<void> {
  return new Promise<void>((ok) => {
    if (p.exitCode !== null || p.signalCode !== null) { ok(); return; }
    const t = setTimeout(() => { p.kill('SIGKILL'); }, 30_000);
    p.once('exit', () => { clearTimeout(t); ok(); });
    if (graceful && p.connected) p.disconnect(); else p.kill();
  });
}
