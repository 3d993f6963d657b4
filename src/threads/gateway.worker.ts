// One gateway thread: the whole request path on its own uWebSockets.js app,
// listening on the shared port (Linux spreads connections with SO_REUSEPORT).
// It never exits on its own (re2 and uWebSockets.js can both abort the process
// when a thread that loaded them ends): threads stop serving on drain, and the
// main thread ends the process.
import { parentPort, workerData } from 'node:worker_threads';
import { createLogger } from '../logger.js';
import { startApp, type App } from '../app.js';
import { loadConfig } from '../config/load-config.js';
import type { ThreadStart, ToThread } from './protocol.js';
import { ThreadLink } from './thread-link.js';

const start = workerData as ThreadStart;
const port = parentPort!;
// A gateway thread must not end by itself, even drained or failed: Node would
// close its loop while uWebSockets.js still holds a handle in it, which aborts
// the whole process. The main thread ends the process; this timer keeps the
// thread alive until then.
setInterval(() => {}, 2 ** 30);
const link = new ThreadLink(port, start.index);
const log = createLogger(start.logLevel).child({ thread: start.index });
let app: App | undefined;

// Listening before startApp: starting already asks the main thread (the limiter store seeds budgets there).
port.on('message', (m: ToThread) => {
  if (m.type !== 'drain') { void link.onMessage(m); return; }
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
