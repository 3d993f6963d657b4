// The main side's handle on one gateway of several: a worker thread (the
// uWebSockets.js front end) or a cluster worker process (node:http, which on
// Node 20 cannot bind one port twice in a process). Both speak protocol.ts.
import cluster from 'node:cluster';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { FromThread, ThreadStart, ToThread } from './protocol.js';
import { processExecArgv, threadResourceLimits, yieldSemiSpaceToThreads } from './young-generation.js';

/** A cluster worker reads its ThreadStart from this variable, as a thread reads workerData. */
export const START_ENV = 'SLUICE_THREAD_START';

const WORKER = new URL('./gateway.worker.js', import.meta.url);

export interface GatewayPeer {
  send(m: ToThread): void;
  onMessage(fn: (m: FromThread) => void): void;
  onExit(fn: () => void): void;
  onError(fn: (err: Error) => void): void;
  /** After its drain: a process is ended here; a thread ends with the process. */
  end(): void;
  /** Ends a gateway still starting, at once: a stop that came during the start does not wait for it. */
  abandon(): void;
}

export function spawnThread(start: ThreadStart, semiSpaceMb: number): GatewayPeer {
  yieldSemiSpaceToThreads(semiSpaceMb);
  const w = new Worker(WORKER, { workerData: start, resourceLimits: threadResourceLimits(semiSpaceMb) });
  return {
    send: (m) => w.postMessage(m),
    onMessage: (fn) => w.on('message', fn),
    onExit: (fn) => w.once('exit', fn),
    onError: (fn) => w.once('error', fn),
    end() {},
    abandon: () => { void w.terminate(); },
  };
}

export function spawnProcess(start: ThreadStart, semiSpaceMb: number): GatewayPeer {
  // Structured clone over IPC, as with postMessage: trace rows and Uint8Arrays cross unchanged.
  cluster.setupPrimary({ exec: fileURLToPath(WORKER), args: [], execArgv: processExecArgv(semiSpaceMb), serialization: 'advanced' });
  const w = cluster.fork({ [START_ENV]: JSON.stringify(start) });
  return {
    send: (m) => { if (w.isConnected()) w.send(m); },
    onMessage: (fn) => w.on('message', fn),
    onExit: (fn) => w.once('exit', fn),
    onError: (fn) => w.once('error', fn),
    end: () => { if (!w.isDead()) w.kill(); },
    abandon: () => { if (!w.isDead()) w.kill(); },
  };
}
