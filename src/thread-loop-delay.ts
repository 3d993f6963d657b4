// The event-loop delay of one gateway thread (or cluster worker process), as
// /metrics reports it. prom-client's default metrics measure the loop of the
// thread that collects them: with gateway threads that is the main thread,
// which writes traces and serves nothing, so the loops that serve requests
// would go unseen. Each gateway reports the same gauges as prom-client's
// `nodejs_eventloop_lag_*`, labelled with its thread, with the same
// aggregators and the same window (since the last scrape).
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Gauge, type Registry } from 'prom-client';

type Aggregator = 'min' | 'max' | 'average';

/** Name suffix, what it reads off the histogram (nanoseconds), help text, and how /metrics merges it. */
const GAUGES: ReadonlyArray<readonly [string, (h: ReturnType<typeof monitorEventLoopDelay>) => number, string, Aggregator]> = [
  ['min', (h) => h.min, 'The minimum recorded event loop delay.', 'min'],
  ['max', (h) => h.max, 'The maximum recorded event loop delay.', 'max'],
  ['mean', (h) => h.mean, 'The mean of the recorded event loop delays.', 'average'],
  ['stddev', (h) => h.stddev, 'The standard deviation of the recorded event loop delays.', 'average'],
  ['p50', (h) => h.percentile(50), 'The 50th percentile of the recorded event loop delays.', 'average'],
  ['p90', (h) => h.percentile(90), 'The 90th percentile of the recorded event loop delays.', 'average'],
  ['p99', (h) => h.percentile(99), 'The 99th percentile of the recorded event loop delays.', 'average'],
];

export function exposeThreadLoopDelay(registry: Registry, thread: number, resolutionMs: number): void {
  const histogram = monitorEventLoopDelay({ resolution: resolutionMs });
  histogram.enable();
  const labels = { thread: String(thread) };
  // The first gauge's collect sets every one and then starts a new window, as prom-client's own does:
  // the registry collects in the order of registration, so the rest are read after it.
  const gauges: Gauge<'thread'>[] = [];
  const collect = (): void => {
    GAUGES.forEach(([, read], i) => gauges[i]!.set(labels, histogram.count > 0 ? read(histogram) / 1e9 : 0));
    histogram.reset();
  };
  GAUGES.forEach(([suffix, , help, aggregator], i) => {
    gauges.push(new Gauge({
      name: `nodejs_eventloop_lag_${suffix}_seconds`, help, labelNames: ['thread'] as const, aggregator, registers: [registry],
      ...(i === 0 ? { collect } : {}),
    }));
  });
}
