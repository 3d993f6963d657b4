// Slowloris and idle connections. On node:http the bounds are configuration
// (server.headers_timeout_ms, server.idle_timeout_ms); uWebSockets.js has one
// fixed ~10 s timeout, checked on a 4 s tick, that closes a connection whose
// headers trickle in and an idle keep-alive connection alike (measured: 8-12 s).
// Either way other callers are served while the slow one waits.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { HTTP_KINDS, startGateway, type TestGateway } from './helpers/gateway.js';
import { stopTestPostgres } from './helpers/pg.js';
import { rawRequest } from './helpers/raw-http.js';

after(stopTestPostgres);

const HEADERS_MS = 1_000;
const IDLE_MS = 500;
/** [at least, at most] ms until the gateway closes the connection. node checks its timeouts every HEADERS_MS / 2. */
const BOUNDS = {
  node: { trickle: [HEADERS_MS - 100, HEADERS_MS + 1_500], idle: [IDLE_MS - 100, IDLE_MS + 1_500] },
  uws: { trickle: [7_000, 14_000], idle: [7_000, 14_000] },
} as const;

/** Resolves with the ms from `since` until the server closed `socket`, or Infinity if it is still open after `giveUpMs`. */
function closedAfter(socket: Socket, since: () => number, giveUpMs: number): Promise<number> {
  return new Promise((ok) => {
    const timer = setTimeout(() => { socket.destroy(); ok(Infinity); }, giveUpMs);
    socket.once('close', () => { clearTimeout(timer); ok(Date.now() - since()); });
  });
}

for (const http of HTTP_KINDS) {
  describe(`connection timeouts over ${http}`, () => {
    let gw: TestGateway;
    let port: number;

    before(async () => {
      gw = await startGateway({ http, config: { server: { headers_timeout_ms: HEADERS_MS, idle_timeout_ms: IDLE_MS } } });
      port = Number(new URL(gw.url).port);
    });
    after(() => gw.close());

    test('a header trickled one byte per 100 ms is cut off; an idle keep-alive connection is closed; others are served meanwhile', async (t) => {
      // uWS answers 505 to a request line that arrives in pieces, so the line goes whole and the headers trickle.
      const slow = connect(port, '127.0.0.1');
      slow.on('error', () => {});
      const slowStart = Date.now();
      slow.write('GET /healthz HTTP/1.1\r\nhost: x\r\n');
      const trickle = setInterval(() => { if (!slow.destroyed) slow.write('a'); }, 100);
      const b = BOUNDS[gw.app.httpKind];
      const slowClosed = closedAfter(slow, () => slowStart, b.trickle[1] + 1_000);

      const idle = connect(port, '127.0.0.1');
      idle.on('error', () => {});
      let answeredAt = 0;
      const idleClosed = closedAfter(idle, () => answeredAt, b.idle[1] + 1_000);
      idle.on('data', () => { answeredAt ||= Date.now(); });
      idle.write('GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n');

      // While the trickler holds its connection, ordinary requests are answered promptly.
      let served = 0;
      const serving = (async () => {
        for (let i = 0; i < 10; i++) {
          const t0 = Date.now();
          const r = await rawRequest(gw.url, 'GET', '/healthz');
          assert.equal(r.status, 200);
          assert.ok(Date.now() - t0 < 1_000, 'a request waited behind the slow connection');
          served++;
          await new Promise((ok) => setTimeout(ok, 100));
        }
      })();

      const [slowMs, idleMs] = await Promise.all([slowClosed, idleClosed, serving]);
      clearInterval(trickle);
      t.diagnostic(`trickled headers cut after ${slowMs} ms; idle keep-alive closed ${idleMs} ms after its answer; ${served} others served`);
      assert.ok(slowMs >= b.trickle[0] && slowMs <= b.trickle[1], `the trickling connection was closed after ${slowMs} ms`);
      assert.ok(answeredAt > 0, 'the keep-alive request was answered');
      assert.ok(idleMs >= b.idle[0] && idleMs <= b.idle[1], `the idle connection was closed after ${idleMs} ms`);
      assert.equal(served, 10);
    });
  });
}
