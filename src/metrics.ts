// Prometheus metrics, on a registry per app so that several gateways can live
// in one process (tests, benchmarks). Served at GET /metrics.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export class Metrics {
  readonly registry = new Registry();
  readonly requests = new Counter({ name: 'sluice_requests_total', help: 'Requests by endpoint and caller-visible status', labelNames: ['endpoint', 'status'] as const, registers: [this.registry] });
  readonly authFailures = new Counter({ name: 'sluice_auth_failures_total', help: 'Requests refused for a missing, invalid or revoked key (these have no trace)', registers: [this.registry] });
  readonly upstreamErrors = new Counter({ name: 'sluice_upstream_errors_total', help: 'Upstream failures by provider', labelNames: ['provider'] as const, registers: [this.registry] });
  readonly latency = new Histogram({
    name: 'sluice_request_duration_seconds', help: 'End-to-end gateway latency', labelNames: ['endpoint'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers: [this.registry],
  });

  constructor(defaults = false) {
    if (defaults) collectDefaultMetrics({ register: this.registry });
  }

  /** A value read at scrape time (trace buffer depth, spool size...), so the hot path pays nothing for it. */
  addGauge(name: string, help: string, read: () => number): void {
    new Gauge({ name, help, registers: [this.registry], collect() { this.set(read()); } });
  }
}
