// The upstream fault matrix, on both front ends: every way a provider can fail
// (refused, silent, error statuses, malformed JSON or SSE, dropped mid-body,
// 100 MB answers) against a real socket. Before the first byte the caller gets
// a JSON error with the right status and code; after it, the SSE error event;
// the trace records what the caller saw; and a 100 MB answer is cut off at its
// cap without the process growing by anything like 100 MB.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import type { ConfigInput } from '../src/config/schema.js';
import { startFaultMock, type FaultMock, type UpstreamFault } from './mocks/fault-mock.js';
import { HTTP_KINDS, startGateway, type TestGateway } from './helpers/gateway.js';
import { readSse } from './helpers/fixtures.js';
import { stopTestPostgres } from './helpers/pg.js';
import { MB, peakRssGrowth } from './helpers/resources.js';

after(stopTestPostgres);

const HEADERS_TIMEOUT_MS = 300;
const HUGE = 100 * MB;
/** Well above the 32 MiB the gateway may hold of a JSON answer, well below the 100 MB it must refuse. */
const RSS_BOUND = 150 * MB;
/** The 32 MiB JSON cap plus what loopback socket buffers take in before the cut. */
const SENT_BOUND = 48 * MB;

/** A port that was bound and released: connecting to it is refused. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((ok) => srv.listen(0, '127.0.0.1', ok));
  const { port } = srv.address() as { port: number };
  await new Promise<void>((ok) => srv.close(() => ok()));
  return port;
}

function config(mockUrl: string, deadPort: number): ConfigInput {
  return {
    upstream: { headers_timeout_ms: HEADERS_TIMEOUT_MS },
    // One attempt per call: this matrix is about what one failed call becomes (retries are test/upstream-retry's).
    providers: {
      faulty: { kind: 'openai', base_url: `${mockUrl}/v1`, no_auth: true, retry: { max_attempts: 1 } },
      dead: { kind: 'openai', base_url: `http://127.0.0.1:${deadPort}/v1`, no_auth: true, retry: { max_attempts: 1 } },
    },
    models: [
      { id: 'faulty-model', provider: 'faulty', context_window: 8_000, pricing: { prompt: 1, completion: 2 } },
      { id: 'dead-model', provider: 'dead', context_window: 8_000, pricing: { prompt: 1, completion: 2 } },
    ],
    organizations: [{ id: 'acme', models: ['faulty-model', 'dead-model'] }],
  };
}

interface Row {
  name: string;
  scenario: UpstreamFault;
  stream: boolean;
  model?: string;
  /** The caller's status and error code; `mid` when the failure comes after the first byte (SSE error event). */
  status: number;
  code: 'upstream_error' | 'upstream_timeout';
  mid?: boolean;
  message?: RegExp;
  huge?: boolean;
}

const DEEP_CHUNK = `{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}],"x":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;

const ROWS: Row[] = [
  { name: 'connection refused', scenario: { kind: 'hang' }, model: 'dead-model', stream: false, status: 502, code: 'upstream_error', message: /ECONNREFUSED|connection failed/ },
  { name: 'connection refused, stream', scenario: { kind: 'hang' }, model: 'dead-model', stream: true, status: 502, code: 'upstream_error' },
  { name: 'hangs before headers', scenario: { kind: 'hang' }, stream: false, status: 504, code: 'upstream_timeout' },
  { name: 'hangs before headers, stream', scenario: { kind: 'hang' }, stream: true, status: 504, code: 'upstream_timeout' },
  { name: '429 keeps its status and retry-after', scenario: { kind: 'status', status: 429, headers: { 'retry-after': '7' } }, stream: true, status: 429, code: 'upstream_error' },
  { name: '500 is a 502', scenario: { kind: 'status', status: 500 }, stream: false, status: 502, code: 'upstream_error', message: /500/ },
  { name: '503 is a 502', scenario: { kind: 'status', status: 503 }, stream: true, status: 502, code: 'upstream_error', message: /503/ },
  { name: 'malformed JSON', scenario: { kind: 'malformed-json' }, stream: false, status: 502, code: 'upstream_error', message: /not JSON/ },
  { name: 'drop mid-body', scenario: { kind: 'drop-mid-body' }, stream: false, status: 502, code: 'upstream_error' },
  { name: 'drop mid-stream', scenario: { kind: 'drop-mid-stream' }, stream: true, status: 200, code: 'upstream_error', mid: true },
  { name: 'non-JSON data line first', scenario: { kind: 'bad-sse-data', first: true }, stream: true, status: 502, code: 'upstream_error', message: /malformed stream chunk/ },
  { name: 'non-JSON data line mid-stream', scenario: { kind: 'bad-sse-data', first: false }, stream: true, status: 200, code: 'upstream_error', mid: true, message: /malformed stream chunk/ },
  { name: 'a JSON array as the first data line', scenario: { kind: 'bad-sse-data', first: true, data: '[{"id":"chatcmpl-f","object":"chat.completion.chunk","choices":[]}]' }, stream: true, status: 502, code: 'upstream_error', message: /malformed stream chunk/ },
  { name: 'a JSON array as a data line mid-stream', scenario: { kind: 'bad-sse-data', first: false, data: '[1,2]' }, stream: true, status: 200, code: 'upstream_error', mid: true, message: /malformed stream chunk/ },
  // No id to splice behind: the chunk is parsed and written anew, which nesting this deep overflows.
  { name: 'a chunk nested 100,000 deep first', scenario: { kind: 'bad-sse-data', first: true, data: DEEP_CHUNK }, stream: true, status: 502, code: 'upstream_error', message: /nested too deeply/ },
  { name: 'a chunk nested 100,000 deep mid-stream', scenario: { kind: 'bad-sse-data', first: false, data: DEEP_CHUNK }, stream: true, status: 200, code: 'upstream_error', mid: true, message: /nested too deeply/ },
  { name: '100 MB JSON, chunked', scenario: { kind: 'huge-json', bytes: HUGE, declared: false }, stream: false, status: 502, code: 'upstream_error', message: /larger than 33554432 bytes/, huge: true },
  { name: '100 MB JSON, declared length', scenario: { kind: 'huge-json', bytes: HUGE, declared: true }, stream: false, status: 502, code: 'upstream_error', message: /larger than 33554432 bytes/, huge: true },
  { name: '100 MB error body', scenario: { kind: 'huge-json', bytes: HUGE, declared: false, status: 500 }, stream: false, status: 502, code: 'upstream_error', message: /error body is larger/, huge: true },
  { name: '100 MB SSE line first', scenario: { kind: 'huge-sse-line', bytes: HUGE, first: true }, stream: true, status: 502, code: 'upstream_error', message: /longer than 1048576/, huge: true },
  { name: '100 MB SSE line mid-stream', scenario: { kind: 'huge-sse-line', bytes: HUGE, first: false }, stream: true, status: 200, code: 'upstream_error', mid: true, message: /longer than 1048576/, huge: true },
];

for (const http of HTTP_KINDS) {
  describe(`upstream faults over ${http}`, () => {
    let mock: FaultMock;
    let gw: TestGateway;
    let key: string;

    before(async () => {
      mock = await startFaultMock();
      gw = await startGateway({ http, config: config(mock.url, await closedPort()) });
      key = await gw.key('acme');
    });
    after(async () => { await gw.close(); await mock.close(); });

    for (const row of ROWS) {
      test(`${row.name} → ${row.mid ? 'SSE error event' : `${row.status} ${row.code}`}`, async (t) => {
        mock.scenario = row.scenario;
        const started = Date.now();
        const { result, growth } = await peakRssGrowth(async () => {
          const res = await fetch(`${gw.url}/v1/chat/completions`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: JSON.stringify({ model: row.model ?? 'faulty-model', stream: row.stream, messages: [{ role: 'user', content: 'hi' }] }),
          });
          return { res, text: row.mid ? (await readSse(res)).join('\n\n') : await res.text() };
        });
        const { res, text } = result;
        const rid = res.headers.get('x-request-id')!;
        assert.equal(res.status, row.status, text.slice(0, 300));
        if (row.huge) {
          t.diagnostic(`RSS growth ${(growth / MB).toFixed(1)} MB; the upstream got ${(mock.sent / MB).toFixed(1)} MB out`);
          assert.ok(growth < RSS_BOUND, `RSS grew by ${(growth / MB).toFixed(0)} MB while refusing 100 MB`);
          assert.ok(mock.sent < SENT_BOUND, `the gateway read ${(mock.sent / MB).toFixed(0)} MB rather than cutting the answer off at its cap`);
        }
        let message: string;
        if (row.mid) {
          assert.match(res.headers.get('content-type')!, /^text\/event-stream/);
          const last = text.split('\n\n').at(-1)!;
          assert.match(last, /^event: error\ndata: /, 'the stream ends with the error event');
          assert.ok(!text.includes('data: [DONE]'));
          const payload = JSON.parse(last.split('\ndata: ')[1]!);
          assert.equal(payload.error.code, row.code);
          message = payload.error.message;
        } else {
          assert.match(res.headers.get('content-type')!, /^application\/json/);
          const body = JSON.parse(text);
          assert.equal(body.error.code, row.code);
          assert.equal(body.request_id, rid);
          message = body.error.message;
        }
        if (row.message) assert.match(message, row.message);
        if (row.scenario.kind === 'hang' && !row.model) {
          const took = Date.now() - started;
          assert.ok(took >= HEADERS_TIMEOUT_MS - 50 && took < HEADERS_TIMEOUT_MS + 2_000, `answered after ${took} ms`);
        }
        if (row.scenario.kind === 'status' && row.status === 429) assert.equal(res.headers.get('retry-after'), '7');
        const trace = await gw.traces.waitFor(rid);
        assert.equal(trace.status_code, row.status);
        assert.equal(trace.error_code, row.code);
        assert.equal(trace.stream_aborted, row.mid === true);
        // Streamed only when the SSE head went out: a stream request answered with a JSON error was not delivered as one.
        assert.equal(trace.streamed, row.mid === true);
        assert.equal(trace.ttfb_ms === null, row.mid !== true);
      });
    }
  });
}
