// Callers that read slowly or not at all, on both front ends. A stream is
// consumed as it goes, so a 100 MB answer passes through a reading caller in
// bounded memory; a caller that stops reading pauses the upstream (see the
// backpressure test in e2e-chat) and, after server.stalled_write_timeout_ms
// without the socket draining, is cut off, with the upstream call aborted.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import { HTTP_KINDS, startGateway, type TestGateway } from './helpers/gateway.js';
import { oneUpstreamConfig, UPSTREAM_KEY_ENV } from './helpers/fixtures.js';
import { stopTestPostgres } from './helpers/pg.js';
import { openStream } from './helpers/raw-stream.js';
import { eventually, forceGc, heapUsed, MB, peakRssGrowth } from './helpers/resources.js';

after(stopTestPostgres);

const STALL_MS = 1_000;
/** Below uWS's own ~10-12 s timeout, so that it is the gateway's deadline that acts. */
const STALL_BOUND_MS = 6_000;
const RSS_BOUND = 150 * MB;
/** What may stay referenced mid-stream: buffers in flight, never the stream so far. */
const RETAINED_BOUND = 24 * MB;
/** 1 KiB content chunks of about 1.17 KB on the wire: about 105 MB. */
const LONG_STREAM_CHUNKS = 90_000;

for (const http of HTTP_KINDS) {
  describe(`slow clients over ${http}`, () => {
    let mock: OpenAIMock;
    let gw: TestGateway;
    let key: string;

    before(async () => {
      mock = await startOpenAIMock();
      const config = oneUpstreamConfig(mock.url, { server: { body_limit_bytes: 64 * 1024, stalled_write_timeout_ms: STALL_MS } });
      gw = await startGateway({ http, config, env: { [UPSTREAM_KEY_ENV]: OPENAI_MOCK_KEY } });
      key = await gw.key('acme');
    });
    after(async () => { await gw.close(); await mock.close(); });

    /** Streams `chunks` KiB through the gateway to a caller that reads as fast as it can; resolves with the bytes read. */
    async function readAll(chunks: number, onProgress?: (bytes: number) => void): Promise<number> {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'up-model', stream: true, mock_big_stream: chunks, messages: [{ role: 'user', content: 'big' }] }),
      });
      assert.equal(res.status, 200);
      let bytes = 0;
      let tail = '';
      for await (const c of res.body!) {
        bytes += c.byteLength;
        onProgress?.(bytes);
        tail = (tail + Buffer.from(c).toString('latin1')).slice(-64);
      }
      assert.ok(tail.endsWith('data: [DONE]\n\n'), 'the stream completed');
      return bytes;
    }

    test('a 100 MB stream reaches a reading caller whole, retaining no more than a few MB', async (t) => {
      // What "bounded" means is that nothing holds on to what has passed. RSS alone cannot
      // tell that from garbage V8 has not collected yet (it swung from 80 to 214 MB between
      // runs), so every 20 MB a full collection measures what the process still retains.
      await readAll(20_000);
      forceGc();
      const base = heapUsed();
      let retained = 0;
      let next = 20 * MB;
      const { result: received, growth } = await peakRssGrowth(() => readAll(LONG_STREAM_CHUNKS, (bytes) => {
        if (bytes < next) return;
        next += 20 * MB;
        forceGc();
        retained = Math.max(retained, heapUsed() - base);
      }));
      t.diagnostic(`${(received / MB).toFixed(0)} MB through the gateway; retained heap at most ${(retained / MB).toFixed(1)} MB; RSS peak growth ${(growth / MB).toFixed(1)} MB`);
      assert.ok(received > 100 * MB);
      assert.ok(retained < RETAINED_BOUND, `the process retained ${(retained / MB).toFixed(0)} MB while streaming 100 MB`);
    });

    test('a caller that never reads is cut off after the stalled-write timeout; the upstream is aborted', async (t) => {
      const abortedBefore = mock.aborted;
      const { result, growth } = await peakRssGrowth(async () => {
        const s = openStream(gw.url, key, { model: 'up-model', stream: true, mock_big_stream: 50_000, messages: [{ role: 'user', content: 'big' }] });
        const head = await s.first;
        // From here on nothing is read: the kernel buffers fill, then the gateway's writes stop draining.
        s.socket.pause();
        const stalledAt = Date.now();
        const cut = await eventually(() => mock.aborted > abortedBefore, STALL_BOUND_MS + STALL_MS);
        const after = Date.now() - stalledAt;
        s.socket.destroy();
        return { head, cut, after };
      });
      t.diagnostic(`upstream aborted ${result.after} ms after the caller stopped reading; RSS peak growth ${(growth / MB).toFixed(1)} MB`);
      assert.match(result.head, /^HTTP\/1\.1 200/);
      assert.ok(result.cut, 'the upstream call was aborted');
      assert.ok(result.after >= STALL_MS - 100 && result.after <= STALL_BOUND_MS, `cut after ${result.after} ms`);
      assert.ok(growth < RSS_BOUND, `RSS grew by ${(growth / MB).toFixed(0)} MB`);
      const rid = /x-request-id: (\S+)/i.exec(result.head)![1]!;
      const trace = await gw.traces.waitFor(rid);
      assert.equal(trace.status_code, 200);
      assert.equal(trace.stream_aborted, true);
      assert.equal(trace.error_code, 'client_closed');
    });
  });
}
