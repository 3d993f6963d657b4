// Wires the gateway together. No I/O happens at import time: everything starts
// in startApp() and stops, in reverse order, in close().
import type { Logger } from 'pino';
import { createLogger, repeatingWarning } from './logger.js';
import { Authenticator } from './auth/authenticator.js';
import { Credentials } from './config/credentials.js';
import type { Config } from './config/load-config.js';
import type { TraceSink } from './domain.js';
import { resolvePayloadSecret, TracePipeline } from './traces/index.js';
import { createHttpServer, type HttpChoice } from './http/create-server.js';
import { exposeTraceMetrics, Metrics } from './metrics.js';
import { createPolicyEngine } from './policy/engine.js';
import { routes } from './pipeline/routes.js';
import { createRequestHandler } from './pipeline/handle-request.js';
import { sendError } from './pipeline/reply.js';
import { newRequestId } from './pipeline/request-context.js';
import { GatewayError } from './errors.js';
import type { ThreadLink } from './threads/thread-link.js';
import type { Services } from './pipeline/services.js';
import { compileEmbeddingCatalogue, compileOrgCatalogues } from './routing/org-catalogue.js';
import { ensureOrganizations, touchLastUsed } from './store/api-keys-repo.js';
import { openDatabase } from './store/database.js';
import { readMigrations } from './store/migrate.js';
import { Readiness } from './pipeline/readiness.js';
import { openKeyCache } from './store/key-cache.js';
import { RulesPoller } from './store/rules-poller.js';
import { UpstreamPools } from './upstream/pools.js';
import { ResponseStore } from './responses/store.js';
import { openRedis, whenReady } from './store/redis-client.js';
import { Upstream } from './upstream/upstream.js';
import { Circuits } from './upstream/circuit.js';
import { exposeCircuitMetrics } from './upstream/circuit-metrics.js';
import { openLimits } from './limits/open-limits.js';
import { chainDeps } from './pipeline/dispatch.js';
import { OpenStreams } from './pipeline/open-streams.js';

/** After the grace, how long streams just cut get to settle (their traces) before the connections close. */
const CUT_SETTLE_MS = 1_000;

export interface AppOptions {
  config: Config;
  databaseUrl?: string | undefined;
  redisUrl?: string | undefined;
  dataDir: string;
  host?: string;
  port?: number;
  http?: HttpChoice;
  logger?: Logger;
  /** Replaces the trace pipeline (tests that inspect traces directly). */
  traceSink?: TraceSink;
  /** Set when this app is one gateway thread of several (src/threads/): its link to the main thread and its siblings. */
  thread?: ThreadLink;
}

export interface App {
  readonly port: number;
  readonly url: string;
  readonly httpKind: 'uws' | 'node';
  readonly services: Services;
  readonly databaseUrl: string;
  /** Stops accepting, lets in-flight requests finish (up to the grace period), flushes, then releases everything. */
  close(): Promise<void>;
}

export async function startApp(opts: AppOptions): Promise<App> {
  const { config } = opts;
  const log = opts.logger ?? createLogger(process.env.LOG_LEVEL ?? 'info');
  const db = await openDatabase({ url: opts.databaseUrl, dataDir: opts.dataDir, log: (m) => log.debug(m) });
  const cleanup: Array<() => Promise<void> | void> = [() => db.close()];
  try {
    await ensureOrganizations(db.pool, [...config.organizations.keys()]);
    const credentials = new Credentials(config);
    await credentials.start();
    cleanup.unshift(() => credentials.stop());
    // Process-wide metrics (CPU, memory) come from the main thread once, not from every gateway thread.
    const metrics = new Metrics(!opts.thread, opts.thread?.index, config.telemetry.event_loop_resolution_ms);
    const keyCache = await openKeyCache({
      pool: db.pool, redisUrl: opts.redisUrl, ttlMs: config.auth.cache_ttl_ms, staleMs: config.auth.stale_if_error_ms, prefix: config.redis.key_prefix, log,
    });
    cleanup.unshift(() => keyCache.close());
    const auth = new Authenticator(keyCache.lookup, {
      ttlMs: keyCache.lruTtlMs,
      staleIfErrorMs: config.auth.stale_if_error_ms,
      onOutage: (down, err) => (down
        ? log.warn({ err }, 'key lookups failing; known keys are served from their last good record, unknown keys get 503')
        : log.info('key lookups answer again')),
      maxEntries: config.auth.cache_size,
      flushEveryMs: config.auth.last_used_flush_ms,
      flushLastUsed: (seen) => touchLastUsed(db.pool, seen),
      onFlushError: repeatingWarning(log, 'last_used_at flush failed; will retry'),
    });
    cleanup.unshift(() => auth.close());
    keyCache.attach(auth);
    const rules = new RulesPoller(db.pool, {
      intervalMs: config.redis.rules_poll_ms,
      onError: repeatingWarning(log, 'routing rules poll failed; the previous rules stay in force'),
    });
    await rules.start();
    cleanup.unshift(() => rules.stop());
    const pools = new UpstreamPools({
      connectTimeoutMs: config.upstream.connect_timeout_ms,
      headersTimeoutMs: config.upstream.headers_timeout_ms,
      bodyTimeoutMs: config.upstream.body_timeout_ms,
      connections: config.upstream.connections_per_origin,
      limits: { maxResponseBytes: config.upstream.max_response_bytes, maxEventBytes: config.upstream.max_event_bytes },
    });
    cleanup.unshift(() => pools.close());
    metrics.addGauge('sluice_upstream_queued', 'Upstream calls waiting for a connection (upstream.connections_per_origin)', () => pools.stats().queued);
    metrics.addGauge('sluice_upstream_connections', 'Upstream connections open, busy or idle', () => pools.stats().connected);
    // Only organisations with a `policy` block are scanned; the engine (and its worker threads) exists only if one has.
    const policed = new Map([...config.organizations.values()].filter((o) => o.policy).map((o) => [o.id, o.policy!]));
    const policy = policed.size ? createPolicyEngine(policed, config.policy ?? {}, log, opts.thread?.gateways) : undefined;
    if (policy) {
      cleanup.unshift(() => policy.close());
      metrics.addGauge('sluice_policy_workers', 'Threads of the DLP and moderation scan pool', () => policy.workers);
    }
    // One gateway thread of several counts in the main thread's store, so that limits hold per instance;
    // alone, it keeps its store here and pays no message.
    const limits = await openLimits(config, db.pool, opts.redisUrl, log, opts.thread?.limitStore());
    cleanup.unshift(() => limits.close());
    const circuits = new Circuits(config.upstream.circuit);
    exposeCircuitMetrics(metrics, circuits);
    const anyPayloads = [...config.organizations.values()].some((o) => o.store_payloads);
    const payloadSecret = resolvePayloadSecret(config.traces, process.env, anyPayloads);
    let traces: TraceSink | undefined = opts.traceSink;
    if (!traces) {
      const pipeline = new TracePipeline({ pool: db.pool, settings: config.traces, dataDir: opts.dataDir, logger: log });
      pipeline.start();
      // Registered after everything else it depends on, so it is closed first: after the drain, before Postgres.
      cleanup.unshift(() => pipeline.close());
      exposeTraceMetrics(metrics, pipeline);
      traces = pipeline;
    }
    // Its own connection, failing fast like the others: it carries the pending markers of responses being stored.
    const responsesRedis = opts.redisUrl ? openRedis(opts.redisUrl, log) : undefined;
    if (responsesRedis) {
      cleanup.unshift(() => responsesRedis.quit().then(() => {}, () => responsesRedis.disconnect()));
      await whenReady(responsesRedis, 1_000);
    }
    const responses = new ResponseStore(db.pool, config.responses, log, responsesRedis && { client: responsesRedis, prefix: config.redis.key_prefix });
    responses.start();
    // Closed before the pool (and its Redis) end, so that the writes of the last responses land.
    cleanup.unshift(() => responses.close());
    const otlp = config.telemetry.otlp;
    if (otlp) {
      // Imported only when configured: with telemetry off nothing of OpenTelemetry is loaded.
      const { startOtlp } = await import('./telemetry/otlp-exporter.js');
      const tap = await startOtlp({ ...otlp, headers: { ...otlp.headers } }, traces, (p) => config.providers.get(p)?.kind);
      cleanup.unshift(() => tap.close());
      traces = tap.sink;
    }
    const services: Services = {
      config,
      streams: new OpenStreams(),
      pool: db.pool,
      credentials,
      catalogues: compileOrgCatalogues(config),
      embeddingModels: compileEmbeddingCatalogue(config),
      auth,
      upstream: new Upstream(pools),
      rules: rules.match,
      management: {
        async keyRevoked(hash) { await keyCache.revoked(hash); await opts.thread?.announceRevoked(hash); },
        async keyChanged(hash) { await keyCache.changed(hash); await opts.thread?.announceChanged(hash); },
        async rulesChanged() { await rules.refresh(); await opts.thread?.announceRulesChanged(); },
        async limitsChanged() { await limits.limits.refresh(); await opts.thread?.announceLimitsChanged(); },
      },
      policy,
      traces,
      responses,
      payloadSecret,
      log,
      metrics,
      ...(opts.thread ? { metricsText: () => opts.thread!.metricsText() } : {}),
      readiness: new Readiness({ pool: db.pool, latestMigration: Math.max(0, ...readMigrations().map((m) => m.version)), policy }),
      limits: limits.limits,
      circuits,
      deps: undefined!,
    };
    services.deps = chainDeps(services);
    if (opts.thread) {
      opts.thread.listen({ keyRevoked: (hash) => auth.invalidate(hash), keyChanged: (hash) => auth.forget(hash), rulesChanged: () => rules.refresh(), limitsChanged: () => limits.limits.refresh() });
      opts.thread.collect = () => metrics.registry.getMetricsAsJSON();
    }

    let inflight = 0;
    let draining = false;
    let drained: (() => void) | undefined;
    const handler = createRequestHandler(services, routes, {
      accepting: () => !draining,
      begin: () => { inflight++; },
      end: () => { if (--inflight === 0) drained?.(); },
    });
    const server = createHttpServer(opts.http ?? config.server.http, handler, {
      bodyLimitBytes: config.server.body_limit_bytes,
      timeouts: {
        headersMs: config.server.headers_timeout_ms,
        requestMs: config.server.request_timeout_ms,
        idleMs: config.server.idle_timeout_ms,
        stalledWriteMs: config.server.stalled_write_timeout_ms,
      },
      onHandlerError(err, res) {
        const requestId = newRequestId();
        log.error({ err, request_id: requestId }, 'front-end callback threw');
        sendError(res, new GatewayError('gateway_error', undefined, { cause: err }), requestId);
      },
    });
    const host = opts.host ?? config.server.host;
    const port = await server.listen(host, opts.port ?? config.server.port);
    if ([...config.organizations.values()].some((o) => o.models.some((m) => m.startsWith('mock-')))) {
      log.warn('the demo `mock` provider is activated: its models echo prompts and are not for production');
    }
    // A gateway thread is one of several: the main thread announces the gateway once all are up.
    if (opts.thread) log.debug({ port, http: server.kind }, 'thread listening');
    else log.info({ port, http: server.kind, embeddedPostgres: db.embedded }, 'sluice listening');

    return {
      port,
      url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`,
      httpKind: server.kind,
      services,
      databaseUrl: db.url,
      async close() {
        draining = true;
        await server.close();
        const drain = (ms: number) => new Promise<void>((ok) => {
          drained = ok;
          setTimeout(ok, ms).unref();
        });
        if (inflight > 0) await drain(config.server.shutdown_grace_ms);
        // The grace ran out: open streams end with the shutting_down event, and their requests settle
        // (their traces written) before the connections close, within CUT_SETTLE_MS.
        if (inflight > 0 && services.streams.cutAll() > 0) await drain(CUT_SETTLE_MS);
        server.closeConnections();
        for (const step of cleanup) await step();
      },
    };
  } catch (err) {
    for (const step of cleanup) await Promise.resolve(step()).catch(() => {});
    throw err;
  }
}
