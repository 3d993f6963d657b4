// Runs `node dist/src/main.js serve` as a child process on port 0 and learns
// its port from the `sluice listening` log line: the real binary, sharing
// nothing in memory with the test or with other instances.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export const MAIN = fileURLToPath(new URL('../../src/main.js', import.meta.url));

export interface SluiceProcess {
  url: string;
  child: ChildProcess;
  /** Every stdout line so far, for diagnostics. */
  log: string[];
  stop(): Promise<void>;
}

export async function spawnSluice(configFile: string, env: Record<string, string | undefined>, extraArgs: string[] = []): Promise<SluiceProcess> {
  const child = spawn(process.execPath, [MAIN, 'serve', '--config', configFile, '--port', '0', ...extraArgs], {
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log: string[] = [];
  child.stderr!.on('data', (d: Buffer) => log.push(d.toString()));
  const port = await new Promise<number>((ok, fail) => {
    const t = setTimeout(() => fail(new Error(`sluice did not start:\n${log.join('\n')}`)), 20_000);
    child.once('exit', (code) => { clearTimeout(t); fail(new Error(`sluice exited with ${code}:\n${log.join('\n')}`)); });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      log.push(line);
      try {
        const rec = JSON.parse(line) as { msg?: string; port?: number };
        if (rec.msg === 'sluice listening' && rec.port) { clearTimeout(t); ok(rec.port); }
      } catch { /* not JSON */ }
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    child,
    log,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

/** Runs a one-shot `sluice` CLI command and resolves with its exit code and stdout. */
export async function runCli(args: string[], env: Record<string, string | undefined>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [MAIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => { stdout += d.toString(); });
  child.stderr!.on('data', (d: Buffer) => { stderr += d.toString(); });
  const [code] = await once(child, 'exit') as [number | null];
  return { code, stdout, stderr };
}

/** Polls `probe` every `everyMs` until it returns true; resolves with the elapsed ms, or rejects after `timeoutMs`. */
export async function within(timeoutMs: number, probe: () => Promise<boolean>, everyMs = 50): Promise<number> {
  const start = Date.now();
  for (;;) {
    if (await probe()) return Date.now() - start;
    if (Date.now() - start > timeoutMs) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((ok) => setTimeout(ok, everyMs));
  }
}
