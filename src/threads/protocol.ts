// The messages that cross between the main thread and the gateway threads,
// typed in one place. Each gateway thread runs the whole request path; the
// main thread owns what must exist once per process: the trace writer and its
// spool, the aggregated /metrics, the in-process limiter store, and the order
// of shutdown.
import type { MetricObjectWithValues, MetricValue } from 'prom-client';
import type { TraceRecord } from '../domain.js';
import type { HttpChoice } from '../http/create-server.js';
import type { StoreCall } from '../limits/store.js';

/** workerData of a gateway thread. */
export interface ThreadStart {
  index: number;
  /** How many gateways the instance runs, this one included. */
  gateways: number;
  configPath: string | undefined;
  databaseUrl: string;
  redisUrl: string | undefined;
  dataDir: string;
  host: string;
  /** 0 for the first thread when the configured port is 0; then the port it got, for every other thread. */
  port: number;
  http: HttpChoice;
  logLevel: string;
}

export type MetricsJson = Array<MetricObjectWithValues<MetricValue<string>>>;

/** What one thread's management write must make every other thread apply: a revoked or changed key (its digest), new rules, or new key limits. */
export type Change = { revoked: Uint8Array } | { changed: Uint8Array } | { rules: true } | { limits: true };

export type ToThread =
  | { type: 'drain' }
  | { type: 'metrics-collect'; id: number }
  | { type: 'metrics-text'; id: number; text: string }
  /** Apply a sibling's change, then answer `applied`. */
  | { type: 'apply'; id: number; change: Change }
  /** Every sibling has applied the change this thread announced. */
  | { type: 'announced'; id: number }
  /** The in-process limiter store's answer to `limits` call `id`. */
  | { type: 'limits-answer'; id: number; value: unknown };

export type FromThread =
  | { type: 'ready'; port: number; http: 'uws' | 'node' }
  | { type: 'failed'; message: string }
  /** Traces: `lines` (COPY text, see copy-encoder.ts) with each one's created_at, and `rows` the writer must see whole (a payload, no organisation). */
  | { type: 'traces'; lines: string; created: number[]; rows: TraceRecord[] }
  | { type: 'metrics-request'; id: number }
  | { type: 'metrics-collected'; id: number; json: MetricsJson }
  /** A change made here, for the main thread to have every sibling apply. */
  | { type: 'announce'; id: number; change: Change }
  | { type: 'applied'; id: number }
  /** A call on the process's in-process limiter store; `id` -1 wants no answer. */
  | { type: 'limits'; id: number; call: StoreCall }
  | { type: 'closed' };
