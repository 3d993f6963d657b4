// The per-request cost of the OTLP tap when telemetry.otlp is on: building the
// GenAI attributes from a trace record, starting and ending a span, queueing it
// for the batch exporter (which posts to a local receiver meanwhile). When it is
// off there is no tap at all, so the cost is zero by construction.
//
//   npm run build && node dist/bench/otel-span.js
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Bench } from 'tinybench';
import type { TraceRecord } from '../src/domain.js';
import { genAiSpan } from '../src/telemetry/genai-span.js';
import { startOtlp } from '../src/telemetry/otlp-exporter.js';

let posted = 0;
const receiver = createServer((req, res) => { req.resume(); req.on('end', () => { posted++; res.end('{}'); }); });
await new Promise<void>((ok) => receiver.listen(0, '127.0.0.1', ok));
const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

const trace: TraceRecord = {
  request_id: 'req_0123456789abcdef0123456789abcdef', organization_id: 'acme', api_key_id: 'key_x', endpoint: 'chat',
  provider: 'up', model: 'gpt-4o-mini', requested_model: 'fast', route_reason: 'default', latency_ms: 120,
  prompt_tokens: 10, completion_tokens: 20, total_tokens: 30, cost_usd: 0.000123, status_code: 200, error_code: null,
  redactions: 0, streamed: false, ttfb_ms: null, stream_aborted: false, disclosed_bytes: 0, dry_run: false, created_at: Date.now(),
};
let recorded = 0;
const tap = await startOtlp({ endpoint: url, service_name: 'bench' }, { record() { recorded++; } }, () => 'openai');

// Correctness first.
const s = genAiSpan(trace, () => 'openai');
assert.equal(s.name, 'chat fast');
assert.equal(s.attributes['gen_ai.provider.name'], 'openai');
assert.equal(s.attributes['gen_ai.usage.output_tokens'], 20);
tap.sink.record(trace);
assert.equal(recorded, 1, 'the inner sink still gets every trace');

const bench = new Bench({ time: 1_000, warmup: true });
bench
  .add('genAiSpan (attributes only)', () => { genAiSpan(trace, () => 'openai'); })
  .add('tap.record (attributes + span + queue)', () => { tap.sink.record(trace); });
await bench.run();
await tap.close();
receiver.close();
assert.ok(posted > 0, 'spans reached the receiver');

console.table(bench.tasks.map((t) => {
  const l = (t.result as { latency?: { mean: number; p50?: number; p99?: number } } | undefined)?.latency;
  const us = (ms: number | undefined) => +((ms ?? NaN) * 1000).toFixed(3);
  return { case: t.name, 'µs p50': us(l?.p50), 'µs mean': us(l?.mean), 'µs p99': us(l?.p99) };
}));
