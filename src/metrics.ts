// Prometheus metrics, on a registry per app so that several gateways can live
// in one process (tests, benchmarks). Served at GET /metrics.
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { RequestTally, TallyHistogram, tallyCounter } from './request-tally.js';
import type { TraceMetrics } from './traces/index.js';
import { exposeThreadLoopDelay } from './thread-loop-delay.js';

export class Metrics {
  readonly registry = new Registry();
  /** Requests and their latency, tallied as plain numbers (request-tally.ts). */
  private readonly tally = new RequestTally([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]);
  readonly requests = tallyCounter(this.tally, { name: 'sluice_requests_total', help: 'Requests by endpoint and caller-visible status', registers: [this.registry] });
  readonly authFailures = new Counter({ name: 'sluice_auth_failures_total', help: 'Requests refused for a missing, invalid or revoked key (these have no trace)', registers: [this.registry] });
  readonly requestsDeferred = new Counter({ name: 'sluice_requests_deferred_total', help: 'Requests that arrived once their loop turn had spent server.turn_budget_ms, and started in a later turn', registers: [this.registry] });
  readonly upstreamErrors = new Counter({ name: 'sluice_upstream_errors_total', help: 'Upstream failures by provider', labelNames: ['provider'] as const, registers: [this.registry] });
  readonly latency = new TallyHistogram(this.tally, { name: 'sluice_request_duration_seconds', help: 'End-to-end gateway latency', registers: [this.registry] });

  requestDone(endpoint: string, status: number, seconds: number): void {
    this.tally.record(endpoint, status, seconds);
  }

  /**
   * `defaults`: the process's own metrics (CPU, memory, and the event loop of the thread that collects them).
   * `thread`: this gateway's index when it is one of several, which then reports its own event loop.
   */
  constructor(defaults = false, thread?: number, loopResolutionMs = 10) {
    if (defaults) collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: loopResolutionMs });
    if (thread !== undefined) {
      exposeThreadLoopDelay(this.registry, thread, loopResolutionMs);
      // The tally's total, so an operator can see the threads share the load.
      const tally = this.tally;
      const labels = { thread: String(thread) };
      new Counter({
        name: 'sluice_thread_requests_total', help: 'Requests by gateway thread', labelNames: ['thread'] as const, registers: [this.registry],
        collect() { this.reset(); this.inc(labels, tally.total); },
      });
    }
  }

  /**
   * A value read at scrape time (trace buffer depth, spool size...), so the hot path pays nothing for it.
   * `aggregator` says how /metrics merges it when several threads report it: a count sums, a state does not.
   */
  addGauge(name: string, help: string, read: () => number, aggregator: 'sum' | 'min' | 'max' = 'sum'): void {
    new Gauge({ name, help, registers: [this.registry], aggregator, collect() { this.set(read()); } });
  }
}

/** The trace pipeline's counters, read at scrape time. */
export function exposeTraceMetrics(metrics: Metrics, source: { readonly metrics: TraceMetrics }): void {
  const read = (k: keyof TraceMetrics) => () => Number(source.metrics[k]);
  metrics.addGauge('sluice_traces_written', 'Trace rows committed by COPY since start', read('rowsWritten'));
  metrics.addGauge('sluice_traces_spooled', 'Trace rows written to the local spool since start', read('rowsSpooled'));
  metrics.addGauge('sluice_traces_replayed', 'Spooled trace rows later committed', read('rowsReplayed'));
  metrics.addGauge('sluice_traces_bad_spool_records', 'Spool records that failed their checksum', read('badSpoolRecords'));
  metrics.addGauge('sluice_traces_lost', 'Trace rows neither Postgres nor the spool took (recorded after close, or at shutdown with both failing)', read('rowsLost'));
  metrics.addGauge('sluice_traces_buffered', 'Trace rows in memory, not yet in Postgres or the spool', read('bufferDepth'));
  // Only the process's one trace writer reports these today; were there several, up means every one is.
  metrics.addGauge('sluice_traces_postgres_up', '1 while the trace writer reaches Postgres', read('postgresAvailable'), 'min');
}
