// Circuit state per upstream as a gauge, read at scrape time:
// 0 closed, 1 half-open, 2 open. Each gateway thread has its own circuits, and
// /metrics merges the threads' series: a state is not a quantity, so the
// merged value is the most open thread's ('max'), where the default 'sum'
// would show two open threads as 4.
import { Gauge } from 'prom-client';
import type { Metrics } from '../metrics.js';
import type { Circuits } from './circuit.js';

export function exposeCircuitMetrics(metrics: Metrics, circuits: Circuits): void {
  new Gauge({
    name: 'sluice_upstream_circuit_state',
    help: 'Circuit breaker state per upstream: 0 closed, 1 half-open, 2 open',
    labelNames: ['provider', 'origin'] as const,
    registers: [metrics.registry],
    aggregator: 'max',
    collect() {
      for (const { provider, origin, circuit } of circuits.all.values()) this.set({ provider, origin }, circuit.state);
    },
  });
}
