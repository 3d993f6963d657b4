// Everything a request stage may use, built once by app.ts.
import type { Logger } from 'pino';
import type pg from 'pg';
import type { Management } from '../api/management-auth.js';
import type { Authenticator } from '../auth/authenticator.js';
import type { Config } from '../config/load-config.js';
import type { Credentials } from '../config/credentials.js';
import type { ModelEntry, TraceSink, UpstreamTarget } from '../domain.js';
import type { PolicyEngine } from '../policy/types.js';
import type { OrgCatalogue } from '../routing/org-catalogue.js';
import type { RuleMatcher } from '../routing/resolve-chat.js';
import type { Upstream } from '../upstream/upstream.js';
import type { GatewayRequest } from '../http/types.js';
import type { RequestContext } from './request-context.js';
import type { Metrics } from '../metrics.js';
import type { ResponseStore } from '../responses/store.js';
import type { Readiness } from './readiness.js';
import type { Limits } from '../limits/limits.js';
import type { Circuits } from '../upstream/circuit.js';
import type { ChainDeps } from '../upstream/resilient.js';
import type { OpenStreams } from './open-streams.js';

export interface Services {
  config: Config;
  /** The streams under way, for a shutdown whose grace runs out. */
  streams: OpenStreams;
  /** Postgres, for management endpoints only: the chat path never awaits it. */
  pool: pg.Pool;
  credentials: Credentials;
  catalogues: ReadonlyMap<string, OrgCatalogue>;
  /** Embedding models of the catalogue by id. */
  embeddingModels: ReadonlyMap<string, readonly ModelEntry[]>;
  auth: Authenticator;
  upstream: Upstream;
  rules: RuleMatcher;
  management: Management;
  policy: PolicyEngine | undefined;
  traces: TraceSink;
  /** Stored responses of the Responses API (previous_response_id, GET and DELETE). */
  responses: ResponseStore;
  /** The HMAC secret for signed payload links; undefined when no organisation stores payloads and none is set. */
  payloadSecret: string | undefined;
  log: Logger;
  metrics: Metrics;
  /** Set in a gateway thread of several: /metrics then shows the sum over every thread of the process. */
  metricsText?: () => Promise<string>;
  /** GET /readyz: Postgres, migrations and policy workers, cached briefly. */
  readiness: Readiness;
  /** Rate limits and budgets per key and organisation (docs/limits.md). */
  limits: Limits;
  /** One circuit breaker per upstream provider and origin. */
  circuits: Circuits;
  /** What the retry/fallback chain needs, built once; `auto` reads circuits through it too. */
  deps: ChainDeps;
}

const EMPTY_CATALOGUE: OrgCatalogue = Object.freeze({ orgId: '', chat: [], byId: new Map(), byAlias: new Map(), autoPreference: undefined });

export function catalogueFor(svc: Services, orgId: string): OrgCatalogue {
  return svc.catalogues.get(orgId) ?? { ...EMPTY_CATALOGUE, orgId };
}

/**
 * The authenticate stage: done on return on a cache hit (undefined), a promise
 * only on a miss. Not async: an async function's promise, and the caller's
 * await of it, were two more microtask turns on every request.
 */
export function authenticate(svc: Services, ctx: RequestContext, req: GatewayRequest): Promise<void> | undefined {
  const k = svc.auth.authenticate(req.headers.authorization);
  if (k instanceof Promise) return k.then((rec) => { ctx.key = rec; });
  ctx.key = k;
  return undefined;
}

export function targetFor(svc: Services, entry: ModelEntry): UpstreamTarget {
  const p = svc.config.providers.get(entry.provider)!;
  return { provider: entry.provider, kind: p.kind, baseUrl: p.base_url ?? '', model: entry.id, apiKey: svc.credentials.get(entry.provider) };
}

