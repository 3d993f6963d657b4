// The main side of a sluice with several gateways: it opens the database
// (starting the embedded Postgres when there is no DATABASE_URL), runs the one
// trace writer and spool, starts N gateways on one port (threads under
// uWebSockets.js, cluster worker processes under node:http; gateway-peer.ts),
// sums their metrics for /metrics, and on shutdown drains every gateway before
// it flushes traces and closes the database.
import { createServer, type AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { AggregatorRegistry } from 'prom-client';
import type { Config } from '../config/load-config.js';
import { LocalStore } from '../limits/local-store.js';
import { serveStoreCall } from '../limits/thread-store.js';
import { exposeTraceMetrics, Metrics } from '../metrics.js';
import { openDatabase } from '../store/database.js';
import { TracePipeline } from '../traces/index.js';
import { loadUws } from '../http/uws-server.js';
import { spawnProcess, spawnThread, type GatewayPeer } from './gateway-peer.js';
import type { FromThread, MetricsJson, ThreadStart, ToThread } from './protocol.js';

/** What every thread is started with, less what the main thread decides (its index, their count, the database it opened). */
export interface ThreadedOptions extends Omit<ThreadStart, 'index' | 'gateways' | 'databaseUrl'> {
  config: Config;
  threads: number;
  /** Unset: an embedded Postgres under dataDir, opened here once for every thread. */
  databaseUrl: string | undefined;
  log: Logger;
  /** Aborted by a stop (SIGTERM) that comes while gateways still start: see StartStopped. */
  stop?: AbortSignal;
}

/**
 * What the start rejects with when a stop came first: the gateways already
 * serving have drained and the rest were ended unstarted. Waiting for every
 * one to start first left SIGTERM unheeded for as long as that took, which
 * with many threads on few cores was minutes, or for ever.
 */
export class StartStopped extends Error {
  constructor() { super('stopped while starting'); }
}

export interface ThreadedGateway {
  port: number;
  /** The database the threads use (the embedded one's, when there was no DATABASE_URL). */
  databaseUrl: string;
  close(): Promise<void>;
}

function freePort(host: string): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, host, () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => ok(port));
    });
  });
}

/** A replacement that lives this long has calmed down: the next death is replaced at once again. */
const REPLACE_CALM_MS = 60_000;
const REPLACE_MAX_DELAY_MS = 30_000;
/** How long /metrics waits for the gateways' own metrics. */
const METRICS_WAIT_MS = 2_000;

export async function startThreaded(o: ThreadedOptions): Promise<ThreadedGateway> {
  const db = await openDatabase({ url: o.databaseUrl, dataDir: o.dataDir, log: (m) => o.log.debug(m) });
  const pipeline = new TracePipeline({ pool: db.pool, settings: o.config.traces, dataDir: o.dataDir, logger: o.log });
  pipeline.start();
  const metrics = new Metrics(true, undefined, o.config.telemetry.event_loop_resolution_ms);
  exposeTraceMetrics(metrics, pipeline);
  // Rate limits and budgets hold per instance: without Redis (or while it is down) every thread counts here.
  const limitStore = new LocalStore();

  const threads: GatewayPeer[] = [];
  /** Every gateway started, ready or not: a failed start ends the processes among them. */
  const spawned: GatewayPeer[] = [];
  const collecting = new Map<number, { want: number; parts: MetricsJson[]; done: (parts: MetricsJson[]) => void }>();
  let nextCollect = 0;
  const send = (w: GatewayPeer, m: ToThread) => w.send(m);
  // uWebSockets.js shares the port between threads; node:http needs a process per gateway.
  const asProcesses = o.http === 'node' || !loadUws();

  /** Every thread's metrics and the main thread's, summed into one Prometheus text. */
  async function metricsText(): Promise<string> {
    const id = nextCollect++;
    const parts = await new Promise<MetricsJson[]>((done) => {
      collecting.set(id, { want: threads.length, parts: [], done });
      for (const w of threads) send(w, { type: 'metrics-collect', id });
      // A gateway that cannot answer (stuck, or gone and not yet replaced) must not hang the scrape:
      // after the wait, the sum is of those that answered, and the log says so.
      setTimeout(() => {
        const c = collecting.get(id);
        if (!c) return;
        o.log.warn({ answered: c.parts.length, gateways: c.want }, '/metrics: not every gateway answered; summed those that did');
        done(c.parts);
      }, METRICS_WAIT_MS).unref();
    });
    collecting.delete(id);
    return AggregatorRegistry.aggregate([await metrics.registry.getMetricsAsJSON(), ...parts] as Parameters<typeof AggregatorRegistry.aggregate>[0]).metrics();
  }

  /** Changes announced by one thread, waiting for every other thread to apply them. */
  const applying = new Map<number, { left: number; done: () => void }>();
  let nextApply = 0;

  function onMessage(w: GatewayPeer, m: FromThread): void {
    if (m.type === 'limits') {
      const value = serveStoreCall(limitStore, m.call);
      if (m.id < 0) return;
      if (value instanceof Promise) void value.then((v) => send(w, { type: 'limits-answer', id: m.id, value: v }));
      else send(w, { type: 'limits-answer', id: m.id, value });
      return;
    }
    if (m.type === 'traces') {
      pipeline.recordEncoded(m.lines, m.created);
      for (const row of m.rows) pipeline.record(row);
      return;
    }
    if (m.type === 'announce') {
      const siblings = threads.filter((t) => t !== w);
      const reply = () => send(w, { type: 'announced', id: m.id });
      if (siblings.length === 0) { reply(); return; }
      const id = nextApply++;
      applying.set(id, { left: siblings.length, done: reply });
      for (const t of siblings) send(t, { type: 'apply', id, change: m.change });
      // A thread that cannot answer (stuck, draining) must not hold the management call forever;
      // the cache TTL and the rules poll still bound how long it lags.
      setTimeout(() => { if (applying.delete(id)) reply(); }, 2_000).unref();
      return;
    }
    if (m.type === 'applied') {
      const a = applying.get(m.id);
      if (a && --a.left === 0) { applying.delete(m.id); a.done(); }
      return;
    }
    if (m.type === 'metrics-request') { void metricsText().then((text) => send(w, { type: 'metrics-text', id: m.id, text })); return; }
    if (m.type === 'metrics-collected') {
      const c = collecting.get(m.id);
      if (!c) return;
      c.parts.push(m.json);
      if (c.parts.length === c.want) c.done(c.parts);
    }
  }

  function spawn(index: number, port: number): Promise<{ worker: GatewayPeer; port: number; http: 'uws' | 'node' }> {
    const start: ThreadStart = {
      index, gateways: o.threads, configPath: o.configPath, databaseUrl: db.url, redisUrl: o.redisUrl, dataDir: o.dataDir,
      host: o.host, port, http: o.http, logLevel: o.logLevel,
    };
    const semi = o.config.server.semi_space_mb;
    const worker = asProcesses ? spawnProcess(start, semi) : spawnThread(start, semi);
    spawned.push(worker);
    return new Promise((ok, fail) => {
      let ready = false;
      worker.onMessage((m: FromThread) => {
        if (m.type === 'ready') { ready = true; ok({ worker, port: m.port, http: m.http }); }
        else if (m.type === 'failed') fail(new Error(`gateway thread ${index}: ${m.message}`));
        else onMessage(worker, m);
      });
      worker.onError((err) => { o.log.error({ err, thread: index }, 'gateway thread failed'); fail(err); });
      worker.onExit(() => {
        // While starting, a gateway that dies fails the start instead of hanging it; once serving, it is replaced.
        if (!ready) fail(new Error(`gateway thread ${index} exited while starting`));
        else replace(worker, index, port);
      });
    });
  }

  let closing = false;
  /** When each index was last replaced, and how many times in a row it died soon after. */
  const replaced = new Map<number, { at: number; streak: number }>();
  /**
   * A gateway that died while serving (a crash, a killed process) gets a
   * successor on the same port and index, so the instance keeps its capacity;
   * the others serve meanwhile. One that dies again within a minute of its
   * replacement is likely to go on dying (a request that crashes it, a broken
   * dependency): each further successor waits twice as long, from 0.5 s up to
   * 30 s, rather than spinning. One that cannot start again is logged, not retried.
   */
  function replace(dead: GatewayPeer, index: number, port: number): void {
    const at = threads.indexOf(dead);
    if (closing || at < 0) return;
    threads.splice(at, 1);
    const now = Date.now();
    const last = replaced.get(index);
    const streak = last && now - last.at < REPLACE_CALM_MS ? last.streak + 1 : 0;
    const delay = streak === 0 ? 0 : Math.min(REPLACE_MAX_DELAY_MS, 500 * 2 ** (streak - 1));
    replaced.set(index, { at: now + delay, streak });
    o.log.error({ thread: index, in_ms: delay }, 'gateway thread exited; starting a replacement');
    setTimeout(() => {
      if (closing) return;
      spawn(index, port).then(
        (r) => {
          if (closing) { r.worker.end(); return; }
          threads.push(r.worker);
          o.log.info({ thread: index }, 'gateway thread replaced');
        },
        (err: unknown) => o.log.error({ err, thread: index }, 'replacing a gateway thread failed'),
      );
    }, delay).unref();
  }

  /** Asks every serving gateway to drain (its requests end, its traces come here) and waits until each has. */
  function drainServing(): Promise<unknown> {
    return Promise.all(threads.map((w) => new Promise<void>((ok) => {
      w.onMessage((m: FromThread) => { if (m.type === 'closed') ok(); });
      w.onExit(() => ok());
      send(w, { type: 'drain' });
    })));
  }

  let starting: Array<Promise<void>> = [];
  const stopped = new Promise<never>((_, fail) => {
    const stop = o.stop;
    if (!stop) return;
    if (stop.aborted) fail(new StartStopped());
    else stop.addEventListener('abort', () => fail(new StartStopped()), { once: true });
  });
  stopped.catch(() => {});
  try {
    // Every thread binds the same port. uWebSockets.js does not share an ephemeral port, so
    // port 0 is resolved to a free port first (tests, benchmarks), which every thread then binds.
    const port = o.port === 0 ? await freePort(o.host) : o.port;
    const first = await Promise.race([spawn(0, port), stopped]);
    threads.push(first.worker);
    // Each joins `threads` as it is ready: it serves from then on, and a failed start drains it.
    starting = Array.from({ length: o.threads - 1 }, (_, i) => spawn(i + 1, first.port).then((r) => { threads.push(r.worker); }));
    await Promise.race([Promise.all(starting), stopped]);
    o.log.info({ port: first.port, http: first.http, threads: o.threads, processes: asProcesses, embeddedPostgres: db.embedded }, 'sluice listening');
    return {
      port: first.port,
      databaseUrl: db.url,
      async close() {
        closing = true;
        await drainServing();
        for (const w of threads) w.end();
        await limitStore.close();
        await pipeline.close();
        await db.close();
      },
    };
  } catch (err) {
    // A gateway that started has been serving (the port was open) while another failed: it
    // drains as at shutdown, so its requests end and their traces are kept. Ended at once, its
    // traces were lost and node aborted on the uWS handles it still held.
    closing = true;
    // After a failure the others still starting finish first: one ready after it serves too, and is
    // drained with them. After a stop they are ended unstarted instead.
    if (err instanceof StartStopped) for (const w of spawned) if (!threads.includes(w)) w.abandon();
    await Promise.allSettled(starting);
    await drainServing();
    for (const w of spawned) w.end();
    await limitStore.close();
    await pipeline.close().catch(() => {});
    await db.close().catch(() => {});
    throw err;
  }
}
