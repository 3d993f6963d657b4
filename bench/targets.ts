// The servers `npm run bench` compares, each in its own process: the bare
// mock (the limit), nginx (the C floor, when installed), a logic-free
// node:http proxy, a logic-free proxy on sluice's own stack (the uws floor),
// the same over the least an HTTP/1.1 client can be (the net floor), and
// sluice in several configurations.
import { fork, type ChildProcess } from 'node:child_process';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startNginx } from './nginx.js';
import { buildConfig } from '../src/config/load-config.js';
import { processExecArgv } from '../src/threads/young-generation.js';

const SERVERS = fileURLToPath(new URL('./load-servers.js', import.meta.url));

/**
 * A gateway in its own process runs as `npm start` runs it: with the default
 * server.semi_space_mb as node's flag (gateway threads take it from the config).
 * The logic-free proxy gets the same heap, so that its ratio prices logic, not GC settings.
 */
const NODE_ARGS = processExecArgv(buildConfig({}).server.semi_space_mb, []);

/** The target that runs sluice's stack (uWS in front, sluice's upstream client behind) with no logic between. */
export const FLOOR = 'uws floor';

export interface ProcessStats { rssMb: number; loopDelayP99Ms: number }

export interface Target {
  name: string;
  url: string;
  key: string;
  /** CPU microseconds used so far by the target's process(es). */
  cpuMicros(): Promise<number>;
  /** Peak RSS and event-loop delay since the last reset; absent for nginx. */
  stats?(): Promise<ProcessStats | undefined>;
  resetStats?(): Promise<void>;
  /** The slow-stream cell's streams this target holds open as an upstream, and its peak since `reset`; the mock's only. */
  slowStreams?(reset?: boolean): Promise<{ open: number; peak: number } | undefined>;
  stop(): void;
}

/** A question to a target process; undefined after `timeoutMs` (an earlier build may not know the command). */
function ask<T>(proc: ChildProcess, cmd: string, key: string, timeoutMs = 2_000): Promise<T | undefined> {
  return new Promise((ok) => {
    const timer = setTimeout(() => { proc.off('message', on); ok(undefined); }, timeoutMs);
    const on = (m: any) => { if (m && key in m) { clearTimeout(timer); proc.off('message', on); ok(m[key]); } };
    proc.on('message', on);
    proc.send({ cmd });
  });
}

/** A load-servers.ts child: `kind` is mock, proxy or one of the sluice variants. */
async function child(name: string, kind: string, upstream: string, env: NodeJS.ProcessEnv = {}, servers = SERVERS, execArgv = kind === 'mock' ? [] : NODE_ARGS): Promise<Target> {
  const proc = fork(servers, [kind, upstream], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env: { ...process.env, ...env }, execArgv });
  const ready = await new Promise<{ port: number; key?: string }>((ok, fail) => {
    proc.once('message', (m: any) => ok(m.ready));
    proc.once('exit', (code) => fail(new Error(`${name} exited with ${code}`)));
  });
  return {
    name,
    url: `http://127.0.0.1:${ready.port}`,
    key: ready.key ?? 'bench',
    cpuMicros: async () => { const c = await ask<{ user: number; system: number }>(proc, 'cpu', 'cpu', 30_000); return c ? c.user + c.system : NaN; },
    stats: () => ask<ProcessStats>(proc, 'stats', 'stats'),
    resetStats: async () => { await ask(proc, 'reset-stats', 'reset'); },
    ...(kind === 'mock' ? { slowStreams: (reset = false) => ask<{ open: number; peak: number }>(proc, reset ? 'reset-slow-streams' : 'slow-streams', 'slowStreams') } : {}),
    // A target that died mid-run has no channel left to close.
    stop: () => { if (proc.connected) proc.disconnect(); setTimeout(() => proc.kill(), 2_000).unref(); },
  };
}

export interface TargetOptions {
  threads: number;
  /** A built checkout of an earlier sluice, run as target `before` to price a change in the same run. */
  baseline?: string | undefined;
}

export async function startTargets(opts: TargetOptions): Promise<{ targets: Target[]; notes: string[] }> {
  const notes: string[] = [];
  const mock = await child('mock', 'mock', '');
  const targets: Target[] = [mock];
  const mockPort = Number(new URL(mock.url).port);
  const nginx = await startNginx(mockPort);
  if (nginx) {
    targets.push({ name: 'nginx', url: `http://127.0.0.1:${nginx.port}`, key: 'bench', cpuMicros: async () => nginx.cpuMicros(), stop: () => nginx.stop() });
  } else {
    notes.push('nginx is not installed (apt-get install nginx-light): its row is left out.');
  }
  targets.push(await child('proxy', 'proxy', mock.url));
  // sluice's own stack with no logic: where uWS has no binary there is no such floor to compare.
  try {
    targets.push(await child(FLOOR, 'uws-floor', mock.url));
  } catch (err) {
    notes.push(`the uws floor did not start (${(err as Error).message}): its row is left out.`);
  }
  // What sluice's client costs of that floor: the same front end over a bare one (bench/net-floor-proxy.ts).
  try {
    targets.push(await child('net floor', 'net-floor', mock.url));
  } catch (err) {
    notes.push(`the net floor did not start (${(err as Error).message}): its row is left out.`);
  }
  targets.push(await child('sluice', 'sluice', mock.url, { SLUICE_THREADS: '1' }));
  targets.push(await child('sluice+policy', 'sluice-policy', mock.url, { SLUICE_THREADS: '1' }));
  if (opts.threads > 1) {
    try {
      targets.push(await child(`sluice x${opts.threads}`, 'sluice', mock.url, { SLUICE_THREADS: String(opts.threads) }));
    } catch (err) {
      notes.push(`sluice with ${opts.threads} threads did not start (${(err as Error).message}).`);
    }
  }
  // An earlier build runs with today's node flags, so that `before` prices the code alone; with policy too, so that a change to policy is priced.
  if (opts.baseline) {
    const servers = join(resolve(opts.baseline), 'dist/bench/load-servers.js');
    targets.push(await child('before', 'sluice', mock.url, {}, servers));
    targets.push(await child('before+policy', 'sluice-policy', mock.url, { SLUICE_THREADS: '1' }, servers));
  }
  return { targets, notes };
}
