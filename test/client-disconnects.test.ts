// 1,000 callers hang up mid-stream, on both front ends. Each hang-up must abort
// its upstream call (the mock counts responses whose connection closed before
// they finished), and afterwards the process holds no more sockets, file
// descriptors or memory than before: nothing is leaked per abandoned stream.
//
// An aborted call closes its upstream connection and nothing reconnects, so
// the descriptors come back to the baseline (24 → 424 at peak → 24, measured).
// Under undici, which reconnected after an aborted call, the pool kept up to
// two idle connections per concurrent stream here until its keep-alive
// timeout, and this allowed 430 descriptors for them; a leak of one descriptor
// per stream would be 1,000.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import { HTTP_KINDS, startGateway, type TestGateway } from './helpers/gateway.js';
import { oneUpstreamConfig, UPSTREAM_KEY_ENV } from './helpers/fixtures.js';
import { stopTestPostgres } from './helpers/pg.js';
import { openStream } from './helpers/raw-stream.js';
import { eventually, fdCount, forceGc, heapUsed, MB, rss } from './helpers/resources.js';

after(stopTestPostgres);

const CALLERS = 1_000;
const AT_ONCE = 100;
/** A few that come and go (Postgres connections, the test's own sockets closing). */
const FD_SLACK = 30;
/** RSS: V8 keeps pages it grew into, so this only catches gross growth; the heap after a full GC is the leak check. */
const RSS_SLACK = 100 * MB;
/** Measured: +3 to +12 MB whether 500, 1,000 or 3,000 streams ran (idle pool sockets, compiled code); a leak grows with the count. */
const HEAP_SLACK = 20 * MB;

for (const http of HTTP_KINDS) {
  describe(`client disconnects over ${http}`, () => {
    let mock: OpenAIMock;
    let gw: TestGateway;
    let key: string;

    before(async () => {
      mock = await startOpenAIMock();
      gw = await startGateway({ http, config: oneUpstreamConfig(mock.url), env: { [UPSTREAM_KEY_ENV]: OPENAI_MOCK_KEY } });
      key = await gw.key('acme');
    });
    after(async () => { await gw.close(); await mock.close(); });

    test(`${CALLERS} callers leave mid-stream: every upstream call is aborted, nothing is left open`, async (t) => {
      // Each stream would take 40 words × 50 ms = 2 s: every caller leaves long before its end.
      mock.fault = 'slow-chunks';
      mock.slowMs = 50;
      const body = { model: 'up-model', stream: true, messages: [{ role: 'user', content: 'w '.repeat(40) }] };
      // One stream first, so that pools, JIT and buffers exist before the baseline is taken.
      const warm = openStream(gw.url, key, body);
      await warm.first;
      warm.socket.destroy();
      assert.ok(await eventually(() => mock.aborted === 1, 3_000), 'the warm-up stream was aborted upstream');
      forceGc();
      const fds0 = fdCount();
      const rss0 = rss();
      const heap0 = heapUsed();
      const abortedBefore = mock.aborted;

      const started = Date.now();
      let maxFds = 0;
      for (let done = 0; done < CALLERS; done += AT_ONCE) {
        const batch = Array.from({ length: Math.min(AT_ONCE, CALLERS - done) }, () => openStream(gw.url, key, body));
        const firsts = await Promise.all(batch.map((s) => s.first));
        for (const f of firsts) assert.match(f, /^HTTP\/1\.1 200/);
        maxFds = Math.max(maxFds, fdCount());
        for (const s of batch) s.socket.destroy();
      }
      const allAborted = await eventually(() => mock.aborted - abortedBefore === CALLERS, 10_000);
      assert.ok(allAborted, `${mock.aborted - abortedBefore} of ${CALLERS} upstream calls were aborted`);
      // The traces say what happened: the caller left a stream that had begun.
      const last = gw.traces.rows.at(-1)!;
      assert.equal(last.stream_aborted, true);
      assert.equal(last.error_code, 'client_closed');

      const settled = await eventually(() => fdCount() <= fds0 + FD_SLACK, 5_000);
      const fds1 = fdCount();
      // What the test itself kept (the mock's request log, the captured traces) is not the gateway's.
      mock.requests.length = 0;
      gw.traces.rows.length = 0;
      forceGc();
      const rss1 = rss();
      const heap1 = heapUsed();
      t.diagnostic(`${CALLERS} streams in ${Date.now() - started} ms; fds ${fds0} → peak ${maxFds} → ${fds1}; `
        + `RSS ${(rss0 / MB).toFixed(0)} → ${(rss1 / MB).toFixed(0)} MB; heap after GC ${(heap0 / MB).toFixed(1)} → ${(heap1 / MB).toFixed(1)} MB`);
      assert.ok(maxFds > fds0 + AT_ONCE, 'the batches really were open at once');
      assert.ok(settled, `file descriptors stayed at ${fds1}, baseline ${fds0}`);
      assert.ok(heap1 - heap0 < HEAP_SLACK, `the heap kept ${((heap1 - heap0) / MB).toFixed(1)} MB after ${CALLERS} streams`);
      assert.ok(rss1 - rss0 < RSS_SLACK, `RSS grew by ${((rss1 - rss0) / MB).toFixed(0)} MB`);
      mock.fault = 'none';
    });

    test('a caller that leaves while sending its body: the request ends, traced 499 client_closed', async () => {
      gw.traces.rows.length = 0;
      const requestsBefore = mock.requests.length;
      const sock = connect(Number(new URL(gw.url).port), '127.0.0.1');
      await once(sock, 'connect');
      // A length the body never reaches: the gateway is still reading it when the caller goes.
      sock.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"model":"up-model"`);
      await new Promise((ok) => setTimeout(ok, 100));
      sock.destroy();
      // Before the fix, uWS never failed the read: no trace, and shutdown waited out its grace for it.
      assert.ok(await eventually(() => gw.traces.rows.length === 1, 3_000), 'the abandoned request was traced');
      const trace = gw.traces.rows[0]!;
      assert.equal(trace.status_code, 499);
      assert.equal(trace.error_code, 'client_closed');
      assert.equal(mock.requests.length, requestsBefore, 'nothing went upstream');
    });
  });
}
