// Circuit state per upstream as a gauge, read at scrape time:
// 0 closed, 1 half-open, 2 open.
import { Gauge } from 'prom-client';
import type { Metrics } from '../metrics.js';
import type { Circuits } from './circuit.js';

export function exposeCircuitMetrics(metrics: Metrics, circuits: Circuits): void {
  new Gauge({
    name: 'sluice_upstream_circuit_state',
    help: 'Circuit breaker state per upstream: 0 closed, 1 half-open, 2 open',
    labelNames: ['provider', 'origin'] as const,
    registers: [metrics.registry],
    collect() {
      for (const { provider, origin, circuit } of circuits.all.values()) this.set({ provider, origin }, circuit.state);
    },
  });
}
