// Requests by endpoint and status, and their latency, tallied in plain numbers
// as each request ends and handed to prom-client only when /metrics is read.
// prom-client's labelled inc() and observe() hash their labels into a new
// string on every call, cached label children included: about 7k
// instructions a request. Here a request costs a lookup by its endpoint (a
// string from the route table, hashed once), one by its status (a small
// integer), and a walk up the bucket bounds.
import { Counter, Histogram, type MetricObjectWithValues, type MetricValueWithName, type Registry } from 'prom-client';

interface SeriesConfig { name: string; help: string; registers: Registry[] }

/** Requests to one endpoint with one status. */
interface StatusCount { readonly endpoint: string; readonly status: string; n: number }

interface EndpointTally {
  readonly statuses: Map<number, StatusCount>;
  /** Requests per bucket, not summed up the bounds; the last is past the highest bound. */
  readonly buckets: number[];
  sum: number;
  count: number;
}

export class RequestTally {
  readonly byEndpoint = new Map<string, EndpointTally>();
  /** Every StatusCount in the order first seen, the order prom-client lists its series in. */
  readonly counts: StatusCount[] = [];

  constructor(readonly bounds: readonly number[]) {}

  record(endpoint: string, status: number, seconds: number): void {
    let t = this.byEndpoint.get(endpoint);
    if (!t) {
      t = { statuses: new Map(), buckets: new Array<number>(this.bounds.length + 1).fill(0), sum: 0, count: 0 };
      this.byEndpoint.set(endpoint, t);
    }
    const c = t.statuses.get(status);
    if (c) c.n++;
    else {
      const first = { endpoint, status: String(status), n: 1 };
      t.statuses.set(status, first);
      this.counts.push(first);
    }
    const bounds = this.bounds;
    let b = 0;
    while (b < bounds.length && seconds > bounds[b]!) b++;
    t.buckets[b]!++;
    t.sum += seconds;
    t.count++;
  }

  /** Requests recorded, whatever their endpoint. */
  get total(): number {
    let n = 0;
    for (const t of this.byEndpoint.values()) n += t.count;
    return n;
  }

  clear(): void {
    this.byEndpoint.clear();
    this.counts.length = 0;
  }
}

type Names = 'endpoint' | 'status';

/** Requests by endpoint and status: the tally's counts, set into prom-client's series when scraped. */
export function tallyCounter(tally: RequestTally, config: SeriesConfig): Counter<Names> {
  return new Counter<Names>({
    ...config,
    labelNames: ['endpoint', 'status'],
    collect() {
      this.reset();
      for (const { endpoint, status, n } of tally.counts) this.inc({ endpoint, status }, n);
    },
  });
}

/** A histogram value as prom-client's registry formats it: the endpoint is a label its series share. */
interface HistogramValue {
  value: number;
  labels: { le?: number | '+Inf' };
  sharedLabels: { endpoint: string };
  metricName: string;
  /** None are kept; prom-client's own values carry the key all the same (null on a bucket). */
  exemplar: null | undefined;
}

/**
 * Latency by endpoint, read from the tally. prom-client's Histogram has no way
 * to be given bucket counts, so this one writes its values itself, as
 * prom-client's own would (the test compares the two on the same samples).
 */
export class TallyHistogram extends Histogram<'endpoint'> {
  private readonly tally: RequestTally;
  private readonly series: SeriesConfig;

  constructor(tally: RequestTally, config: SeriesConfig) {
    super({ ...config, labelNames: ['endpoint'], buckets: [...tally.bounds] });
    this.tally = tally;
    this.series = config;
  }

  /** What the registry prints /metrics from (it prefers this to get()). */
  async getForPromString(): Promise<{ name: string; help: string; type: 'histogram'; aggregator: 'sum'; values: HistogramValue[] }> {
    const { name, help } = this.series;
    const values: HistogramValue[] = [];
    for (const [endpoint, t] of this.tally.byEndpoint) {
      const sharedLabels = { endpoint };
      let acc = 0;
      this.tally.bounds.forEach((le, i) => {
        acc += t.buckets[i]!;
        values.push({ labels: { le }, sharedLabels, value: acc, metricName: `${name}_bucket`, exemplar: null });
      });
      values.push(
        { labels: { le: '+Inf' }, sharedLabels, value: t.count, metricName: `${name}_bucket`, exemplar: null },
        { labels: {}, sharedLabels, value: t.sum, metricName: `${name}_sum`, exemplar: undefined },
        { labels: {}, sharedLabels, value: t.count, metricName: `${name}_count`, exemplar: undefined },
      );
    }
    return { name, help, type: 'histogram', aggregator: 'sum', values };
  }

  /** The same with the shared labels folded into each value's own: what the threads' aggregation reads. */
  override async get(): Promise<MetricObjectWithValues<MetricValueWithName<'endpoint'>>> {
    const data = await this.getForPromString();
    const values = data.values.map(({ sharedLabels, labels, ...rest }) => ({ ...rest, labels: { ...labels, ...sharedLabels } }));
    // prom-client's type asks for a collect function, which its own get() does not return either.
    return { ...data, values } as unknown as MetricObjectWithValues<MetricValueWithName<'endpoint'>>;
  }

  /** Also called by prom-client's constructor, before this one has its tally. */
  override reset(): void { (this.tally as RequestTally | undefined)?.clear(); }
}
