// Runs `sluice serve` as a real child process and waits for its listening log
// line, for tests of the CLI, the embedded Postgres and signal handling.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const MAIN = fileURLToPath(new URL('../../src/main.js', import.meta.url));

export interface ChildGateway {
  proc: ChildProcess;
  url: string;
  logs: string[];
  exited: Promise<number | null>;
}

export function startChild(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<ChildGateway> {
  const proc = spawn(process.execPath, [MAIN, 'serve', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: string[] = [];
  const exited = new Promise<number | null>((ok) => proc.on('exit', (code) => ok(code)));
  return new Promise((ok, fail) => {
    const timer = setTimeout(() => { proc.kill('SIGKILL'); fail(new Error(`sluice did not start:\n${logs.join('')}`)); }, timeoutMs);
    const onLine = (chunk: Buffer) => {
      const text = chunk.toString();
      logs.push(text);
      for (const line of text.split('\n')) {
        try {
          const rec = JSON.parse(line);
          if (rec.msg === 'sluice listening') { clearTimeout(timer); ok({ proc, url: `http://127.0.0.1:${rec.port}`, logs, exited }); }
        } catch { /* not a log line */ }
      }
    };
    proc.stdout!.on('data', onLine);
    proc.stderr!.on('data', onLine);
    void exited.then((code) => { clearTimeout(timer); fail(new Error(`sluice exited with ${code}:\n${logs.join('')}`)); });
  });
}

/** Runs a one-shot CLI command and returns its parsed JSON output. */
export function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; json: any; stderr: string }> {
  return new Promise((ok) => {
    const proc = spawn(process.execPath, [MAIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    proc.stdout.on('data', (c) => { out += c; });
    proc.stderr.on('data', (c) => { err += c; });
    proc.on('exit', (code) => {
      let json: any;
      try { json = JSON.parse(out); } catch { json = undefined; }
      ok({ code, json, stderr: err });
    });
  });
}
