// Wires the gateway together. No I/O happens at import time: everything starts
// in startApp() and stops, in reverse order, in close().
import pino, { type Logger } from 'pino';
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
import type { Services } from './pipeline/services.js';
import { compileEmbeddingCatalogue, compileOrgCatalogues } from './routing/org-catalogue.js';
import { ensureOrganizations, touchLastUsed } from './store/api-keys-repo.js';
import { openDatabase } from './store/database.js';
import { openKeyCache } from './store/key-cache.js';
import { RulesPoller } from './store/rules-poller.js';
import { UpstreamPools } from './upstream/pools.js';
import { Upstream } from './upstream/upstream.js';

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
  const log = opts.logger ?? pino({ level: process.env.LOG_LEVEL ?? 'info' });
  const db = await openDatabase({ url: opts.databaseUrl, dataDir: opts.dataDir, log: (m) => log.debug(m) });
  const cleanup: Array<() => Promise<void> | void> = [() => db.close()];
  try {
    await ensureOrganizations(db.pool, [...config.organizations.keys()]);
    const credentials = new Credentials(config);
    await credentials.start();
    cleanup.unshift(() => credentials.stop());
    const metrics = new Metrics(true);
    const keyCache = await openKeyCache({
      pool: db.pool, redisUrl: opts.redisUrl, ttlMs: config.auth.cache_ttl_ms, prefix: config.redis.key_prefix, log,
    });
    cleanup.unshift(() => keyCache.close());
    const auth = new Authenticator(keyCache.lookup, {
      ttlMs: keyCache.lruTtlMs,
      maxEntries: config.auth.cache_size,
      flushEveryMs: config.auth.last_used_flush_ms,
      flushLastUsed: (seen) => touchLastUsed(db.pool, seen),
      onFlushError: (err) => log.warn({ err }, 'last_used_at flush failed; will retry'),
    });
    cleanup.unshift(() => auth.close());
    keyCache.attach(auth);
    const rules = new RulesPoller(db.pool, {
      intervalMs: config.redis.rules_poll_ms,
      onError: (err) => log.warn({ err }, 'routing rules poll failed; the previous rules stay in force'),
    });
    await rules.start();
    cleanup.unshift(() => rules.stop());
    const pools = new UpstreamPools({
      connectTimeoutMs: config.upstream.connect_timeout_ms,
      headersTimeoutMs: config.upstream.headers_timeout_ms,
      bodyTimeoutMs: config.upstream.body_timeout_ms,
      connections: config.upstream.connections_per_origin,
    });
    cleanup.unshift(() => pools.close());
    // Only organisations with a `policy` block are scanned; the engine (and its worker threads) exists only if one has.
    const policed = new Map([...config.organizations.values()].filter((o) => o.policy).map((o) => [o.id, o.policy!]));
    const policy = policed.size ? createPolicyEngine(policed, config.policy ?? {}, log) : undefined;
    if (policy) cleanup.unshift(() => policy.close());
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
    const services: Services = {
      config,
      pool: db.pool,
      credentials,
      catalogues: compileOrgCatalogues(config),
      embeddingModels: compileEmbeddingCatalogue(config),
      auth,
      upstream: new Upstream(pools),
      rules: rules.match,
      management: { keyRevoked: (hash) => keyCache.revoked(hash), rulesChanged: () => rules.refresh() },
      policy,
      traces,
      payloadSecret,
      log,
      metrics,
    };

    let inflight = 0;
    let draining = false;
    let drained: (() => void) | undefined;
    const handler = createRequestHandler(services, routes, {
      accepting: () => !draining,
      begin: () => { inflight++; },
      end: () => { if (--inflight === 0) drained?.(); },
    });
    const server = createHttpServer(opts.http ?? config.server.http, handler, { bodyLimitBytes: config.server.body_limit_bytes });
    const host = opts.host ?? config.server.host;
    const port = await server.listen(host, opts.port ?? config.server.port);
    if ([...config.organizations.values()].some((o) => o.models.some((m) => m.startsWith('mock-')))) {
      log.warn('the demo `mock` provider is activated: its models echo prompts and are not for production');
    }
    log.info({ port, http: server.kind, embeddedPostgres: db.embedded }, 'sluice listening');

    return {
      port,
      url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`,
      httpKind: server.kind,
      services,
      databaseUrl: db.url,
      async close() {
        draining = true;
        await server.close();
        if (inflight > 0) {
          await new Promise<void>((ok) => {
            drained = ok;
            setTimeout(ok, config.server.shutdown_grace_ms).unref();
          });
        }
        for (const step of cleanup) await step();
      },
    };
  } catch (err) {
    for (const step of cleanup) await Promise.resolve(step()).catch(() => {});
    throw err;
  }
}
