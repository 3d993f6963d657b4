// The request counter and latency histogram keep plain numbers and hand them
// to prom-client only when scraped. Compared here with prom-client's own
// Counter and Histogram given the same requests: /metrics and the JSON the
// threads' aggregation reads must be the same, value for value.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Counter, Histogram, Registry } from 'prom-client';
import { RequestTally, TallyHistogram, tallyCounter } from '../src/request-tally.js';
import { Metrics } from '../src/metrics.js';

const BOUNDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Endpoint, status, seconds: on bounds, between them, past the last, and zero. */
const SAMPLES: Array<[string, number, number]> = [
  ['chat', 200, 0.005], ['chat', 200, 0.0051], ['chat', 200, 0], ['chat', 429, 0.3], ['chat', 200, 31],
  ['embeddings', 200, 0.01], ['chat', 502, 2.5], ['responses', 200, 1e-9], ['chat', 200, 0.049], ['embeddings', 400, 10],
];

function both(): { tallied: Registry; reference: Registry; tally: RequestTally } {
  const tallied = new Registry();
  const tally = new RequestTally(BOUNDS);
  tallyCounter(tally, { name: 'req_total', help: 'requests', registers: [tallied] });
  new TallyHistogram(tally, { name: 'req_seconds', help: 'latency', registers: [tallied] });
  const reference = new Registry();
  const count = new Counter({ name: 'req_total', help: 'requests', labelNames: ['endpoint', 'status'], registers: [reference] });
  const seconds = new Histogram({ name: 'req_seconds', help: 'latency', labelNames: ['endpoint'], buckets: BOUNDS, registers: [reference] });
  for (const [endpoint, status, s] of SAMPLES) {
    tally.record(endpoint, status, s);
    count.inc({ endpoint, status: String(status) });
    seconds.observe({ endpoint }, s);
  }
  return { tallied, reference, tally };
}

test('/metrics reads as prom-client\'s own counter and histogram would print it', async () => {
  const { tallied, reference } = both();
  const text = await tallied.metrics();
  assert.equal(text, await reference.metrics());
  assert.match(text, /^req_seconds_bucket\{le="0.005",endpoint="chat"\} 2$/m, 'a sample on a bound is counted in it');
  assert.match(text, /^req_seconds_bucket\{le="\+Inf",endpoint="chat"\} 7$/m);
  assert.match(text, /^req_total\{endpoint="chat",status="200"\} 5$/m);
});

test('the JSON the threads\' aggregation reads is prom-client\'s too, and a second scrape counts nothing twice', async () => {
  const { tallied, reference, tally } = both();
  assert.deepEqual(await tallied.getMetricsAsJSON(), await reference.getMetricsAsJSON());
  tally.record('chat', 200, 0.02);
  const again = await tallied.metrics();
  assert.match(again, /^req_total\{endpoint="chat",status="200"\} 6$/m);
  assert.match(again, /^req_seconds_count\{endpoint="chat"\} 8$/m);
});

test('resetting the registry empties the tally', async () => {
  const { tallied } = both();
  tallied.resetMetrics();
  assert.doesNotMatch(await tallied.metrics(), /endpoint=/);
});

test('a gateway thread reports the requests it served', async () => {
  const m = new Metrics(false, 3);
  for (let i = 0; i < 5; i++) m.requestDone('chat', 200, 0.01);
  const text = await m.registry.metrics();
  assert.match(text, /^sluice_thread_requests_total\{thread="3"\} 5$/m);
  assert.match(text, /^sluice_requests_total\{endpoint="chat",status="200"\} 5$/m);
  assert.match(text, /^sluice_request_duration_seconds_bucket\{le="0.01",endpoint="chat"\} 5$/m);
});
