// One gateway of several in one sluice: the whole request path, listening on
// the shared port. With uWebSockets.js it is a worker thread (Linux spreads
// connections with SO_REUSEPORT); with the node:http front end, which cannot
// bind a port twice in one process on Node 20, it is a cluster worker process
// and node's cluster hands it connections. Either way it speaks the same
// messages (protocol.ts) to the main side, which owns the trace writer, the
// limiter store, /metrics and shutdown.
// A thread never exits on its own (re2 and uWebSockets.js can both abort the
// process when a thread that loaded them ends): threads stop serving on drain,
// and the main thread ends the process.
import cluster from 'node:cluster';
import { parentPort, workerData } from 'node:worker_threads';
import { createLogger } from '../logger.js';
import { startApp, type App } from '../app.js';
import { loadConfig } from '../config/load-config.js';
import type { FromThread, ThreadStart, ToThread } from './protocol.js';
import { ThreadLink, type MainPort } from './thread-link.js';
import { START_ENV } from './gateway-peer.js';

interface Channel extends MainPort { onMessage(fn: (m: ToThread) => void): void }

let drained = false;

function channel(): { start: ThreadStart; port: Channel } {
  if (!cluster.isWorker) {
    const p = parentPort!;
    return { start: workerData as ThreadStart, port: { postMessage: (m: FromThread) => p.postMessage(m), onMessage: (fn) => p.on('message', fn) } };
  }
  // The primary orchestrates shutdown: a signal sent to the whole process group (Ctrl-C)
  // must not kill this process mid-stream; and without a primary there is nobody to drain for.
  process.on('SIGINT', () => {});
  process.on('SIGTERM', () => {});
  // Drained, the primary ends this process by disconnecting it: that is a clean exit; any other disconnect is not.
  process.on('disconnect', () => process.exit(drained ? 0 : 1));
  return {
    start: JSON.parse(process.env[START_ENV]!) as ThreadStart,
    port: { postMessage: (m: FromThread) => { process.send!(m); }, onMessage: (fn) => process.on('message', fn) },
  };
}

const { start, port } = channel();
// A gateway thread must not end by itself, even drained or failed: Node would
// close its loop while uWebSockets.js still holds a handle in it, which aborts
// the whole process. The main thread ends the process; this timer keeps the
// thread alive until then.
setInterval(() => {}, 2 ** 30);
const link = new ThreadLink(port, start.index, start.gateways);
const log = createLogger(start.logLevel).child({ thread: start.index });
let app: App | undefined;

// Listening before startApp: starting already asks the main thread (the limiter store seeds budgets there).
port.onMessage((m: ToThread) => {
  if (m.type !== 'drain') { void link.onMessage(m); return; }
  drained = true;
  if (!app) { link.close(); link.send({ type: 'closed' }); return; }
  app.close().then(
    () => { link.close(); link.send({ type: 'closed' }); },
    (err) => { log.error({ err }, 'thread shutdown failed'); link.close(); link.send({ type: 'closed' }); },
  );
});

try {
  app = await startApp({
    config: loadConfig(start.configPath),
    databaseUrl: start.databaseUrl,
    redisUrl: start.redisUrl,
    dataDir: start.dataDir,
    host: start.host,
    port: start.port,
    http: start.http,
    logger: log,
    traceSink: link,
    thread: link,
  });
  link.send({ type: 'ready', port: app.port, http: app.httpKind });
} catch (err) {
  link.send({ type: 'failed', message: (err as Error).message });
}
