// nginx as the C floor for proxying, when it is installed (`apt-get install
// nginx-light`): one worker, keep-alive to the mock, no buffering, as a
// production proxy in front of an LLM would be configured.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Nginx { port: number; proc: ChildProcess; cpuMicros(): number; stop(): void }

function freePort(): Promise<number> {
  return new Promise((ok) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => ok(port));
    });
  });
}

/** utime + stime of a process, in microseconds (clock ticks are 100 Hz on Linux). */
function cpuOf(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch { return 0; }
}

function children(pid: number): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try { if (readFileSync(`/proc/${d}/stat`, 'utf8').split(') ')[1]!.split(' ')[1] === String(pid)) out.push(Number(d)); } catch { /* gone */ }
  }
  return out;
}

export async function startNginx(upstreamPort: number): Promise<Nginx | undefined> {
  if (spawnSync('nginx', ['-v']).error) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-nginx-'));
  const port = await freePort();
  const root = process.getuid?.() === 0 ? 'user root;\n' : '';
  writeFileSync(join(dir, 'nginx.conf'), `${root}worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 16384; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  upstream mock { server 127.0.0.1:${upstreamPort}; keepalive 256; }
  server {
    listen 127.0.0.1:${port} backlog=4096;
    keepalive_requests 1000000;
    location / {
      proxy_pass http://mock; proxy_http_version 1.1; proxy_set_header Connection "";
      proxy_buffering off; proxy_request_buffering off;
    }
  }
}
`);
  const proc = spawn('nginx', ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'], { stdio: 'ignore' });
  for (let i = 0; i < 50; i++) {
    await new Promise((ok) => setTimeout(ok, 100));
    if (children(proc.pid!).length > 0) break;
  }
  return {
    port,
    proc,
    cpuMicros: () => cpuOf(proc.pid!) + children(proc.pid!).reduce((n, c) => n + cpuOf(c), 0),
    // At once, not on a timer: the bench stops its targets as it exits, when no timer runs any more. nginx
    // has its files open, and on quitting writes nothing it has to create, so removing them under it is safe.
    stop() { proc.kill('SIGQUIT'); rmSync(dir, { recursive: true, force: true }); },
  };
}
