// One origin's upstream connections, against a real HTTP server: calls reuse
// the idle connection, concurrent calls each get their own, the cap queues
// calls in order, a call that failed in any way (even one refused before it
// was sent) frees its place (a leaked place under a cap of one would hang
// every later call), calls aborted as they are handed over or on their headers
// leave the calls beside them unharmed, connections the upstream closes are
// forgotten, and close() waits for the calls in flight.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { OriginClients, type CallController, type OriginOptions } from '../src/upstream/origin-clients.js';
import { eventually } from './helpers/resources.js';
import { call } from './helpers/origin-call.js';

const OPTIONS: OriginOptions = { connectTimeoutMs: 1_000, headersTimeoutMs: 300, bodyTimeoutMs: 300, connections: undefined };
/** A call the pool lost would wait forever; this fails the test instead. */
const NO_HANG = { timeout: 10_000 };

describe('OriginClients', () => {
  let server: Server;
  let origin: string;
  let sockets = 0;
  const held: ServerResponse[] = [];

  before(async () => {
    server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
      req.resume();
      req.on('end', () => {
        switch (req.url) {
          case '/hold': return void held.push(res);
          case '/hang': return;
          case '/500': return void res.writeHead(500).end('broken');
          case '/cut': res.writeHead(200, { 'content-length': '100' }); res.write('partial'); return void setTimeout(() => res.socket?.destroy(), 20);
          case '/close': return void res.writeHead(200, { connection: 'close' }).end('closing');
          case '/later': return void setTimeout(() => res.end('later'), 2);
          default: res.end(`ok ${req.url}`);
        }
      });
    });
    server.on('connection', () => { sockets++; });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((ok) => { server.closeAllConnections(); server.close(() => ok()); }));

  const releaseHeld = () => { for (const res of held.splice(0)) res.end('released'); };

  test('calls one after another reuse one connection', NO_HANG, async () => {
    const pool = new OriginClients(origin, OPTIONS);
    const before = sockets;
    for (let i = 0; i < 20; i++) {
      // The connection is free as the answer ends: the next call, made at once, takes it.
      assert.deepEqual(await call(pool, `/n${i}`), { status: 200, body: `ok /n${i}` });
    }
    assert.equal(sockets - before, 1);
    assert.equal(pool.clients, 1);
    assert.equal(pool.connected, 1);
    await pool.close();
  });

  test('concurrent calls each get a connection, and the next round reuses them all', NO_HANG, async () => {
    const pool = new OriginClients(origin, OPTIONS);
    const before = sockets;
    const first = Array.from({ length: 50 }, () => call(pool, '/hold'));
    assert.ok(await eventually(() => held.length === 50, 5_000), `${held.length} of 50 calls reached the upstream`);
    assert.equal(pool.clients, 50);
    releaseHeld();
    for (const a of await Promise.all(first)) assert.equal(a.body, 'released');
    const second = await Promise.all(Array.from({ length: 50 }, (_, i) => call(pool, `/r${i}`)));
    assert.equal(second.filter((a) => a.status === 200).length, 50);
    assert.equal(sockets - before, 50, 'the second round opened connections of its own');
    await pool.close();
  });

  test('past the cap, calls wait in order and run as places free', NO_HANG, async () => {
    const pool = new OriginClients(origin, { ...OPTIONS, connections: 2 });
    const order: string[] = [];
    const calls = ['/hold', '/hold', '/a', '/b', '/c'].map((p, i) => call(pool, p).then((a) => { order.push(`${i}:${a.body}`); return a; }));
    assert.ok(await eventually(() => held.length === 2, 5_000));
    assert.equal(pool.queued, 3);
    assert.equal(pool.clients, 2);
    releaseHeld();
    await Promise.all(calls);
    assert.deepEqual(order.slice(2), ['2:ok /a', '3:ok /b', '4:ok /c']);
    assert.equal(pool.queued, 0);
    await pool.close();
  });

  test('a call that failed in any way frees its place: under a cap of one, the next call still runs', NO_HANG, async () => {
    const pool = new OriginClients(origin, { ...OPTIONS, connections: 1 });
    await assert.rejects(call(pool, '/hang'), /Headers Timeout/i);
    assert.equal((await call(pool, '/500')).status, 500);
    await assert.rejects(call(pool, '/cut'), /other side closed|socket/i);
    let controller: CallController | undefined;
    const aborted = call(pool, '/hold', (c) => { controller = c; });
    assert.ok(await eventually(() => held.length === 1, 5_000));
    controller!.abort(new Error('caller left'));
    await assert.rejects(aborted, /caller left/);
    held.splice(0);
    assert.equal((await call(pool, '/close')).body, 'closing');
    await assert.rejects(call(pool, '/x', undefined, { 'x-bad': 'a\r\nb' }), /invalid x-bad header/i);
    assert.deepEqual(await call(pool, '/after'), { status: 200, body: 'ok /after' });
    assert.equal(pool.queued, 0);
    assert.equal(pool.clients, 1);
    await pool.close();
  });

  test('calls aborted as they are handed over or on their headers, among ordinary ones: every ordinary call is answered, and close() ends with no client', NO_HANG, async () => {
    const pool = new OriginClients(origin, OPTIONS);
    // 0: answered; 1: aborted in onRequestStart, as by a caller already gone; 2: aborted on its headers.
    const leave = (c: CallController) => c.abort(new Error('caller left'));
    const one = (how: number) => call(pool, how ? '/later' : '/x', how === 1 ? leave : undefined, {}, how === 2 ? leave : undefined)
      .then(() => 'answered', (err: Error) => (err.message === 'caller left' ? 'aborted' : `failed: ${err.message}`));
    const failures: string[] = [];
    for (let round = 0; round < 40; round++) {
      const ends = await Promise.all(Array.from({ length: 16 }, (_, i) => one((i + round) % 3)));
      ends.forEach((end, i) => {
        const expected = (i + round) % 3 === 0 ? 'answered' : 'aborted';
        if (end !== expected) failures.push(end);
      });
    }
    assert.deepEqual(failures, [], `${failures.length} of 640 calls ended otherwise than asked`);
    await pool.close();
    assert.equal(pool.clients, 0);
  });

  test('a refused origin fails each call and keeps no client', NO_HANG, async () => {
    const probe = createNetServer();
    await new Promise<void>((ok) => probe.listen(0, '127.0.0.1', ok));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((ok) => probe.close(() => ok()));
    const pool = new OriginClients(`http://127.0.0.1:${port}`, { ...OPTIONS, connections: 1 });
    for (let i = 0; i < 3; i++) await assert.rejects(call(pool, '/x'), /ECONNREFUSED/);
    assert.equal(pool.clients, 0);
    assert.equal(pool.connected, 0);
    await pool.close();
  });

  test('connections the upstream closes while idle are forgotten', NO_HANG, async () => {
    const pool = new OriginClients(origin, OPTIONS);
    await Promise.all(Array.from({ length: 10 }, () => call(pool, '/hold').catch(() => undefined)).concat(
      eventually(() => held.length === 10, 5_000).then(() => { releaseHeld(); return undefined; }),
    ));
    assert.equal(pool.clients, 10);
    server.closeIdleConnections();
    assert.ok(await eventually(() => pool.clients === 0, 5_000), `${pool.clients} clients kept after their connections closed`);
    assert.equal(pool.connected, 0);
    assert.equal((await call(pool, '/again')).body, 'ok /again');
    await pool.close();
  });

  test('close() waits for the calls in flight, then closes every connection', NO_HANG, async () => {
    const pool = new OriginClients(origin, OPTIONS);
    await call(pool, '/warm');
    const inFlight = call(pool, '/hold');
    assert.ok(await eventually(() => held.length === 1, 5_000));
    let closed = false;
    const closing = pool.close().then(() => { closed = true; });
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(closed, false, 'close() returned with a call in flight');
    releaseHeld();
    assert.equal((await inFlight).body, 'released');
    await closing;
    assert.equal(pool.clients, 0);
    assert.ok(await eventually(() => pool.connected === 0, 5_000));
  });
});
