// sluice's upstream HTTP/1.1 client (src/upstream/h1/) on the wire, against a
// raw TCP server that writes each answer byte for byte as the test scripts it:
// every body framing (length, chunked with trailers, the connection's close),
// interim 1xx answers, heads split across reads, repeated headers, keep-alive
// rules, answers nobody asked for, oversized or malformed heads, upgrades,
// request heads that would smuggle, and each timeout. A connection is reused
// only when its answer ended cleanly; the server counts connections to prove it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { recordOf } from './helpers/answer-head.js';
import { AnswerHead } from '../src/upstream/h1/answer-head.js';
import { passHeaders } from '../src/providers/openai-compatible/headers.js';
import { OriginClients, type CallController, type OriginOptions } from '../src/upstream/origin-clients.js';
import { eventually } from './helpers/resources.js';

interface Seen { method: string; path: string; headers: Record<string, string>; body: string; raw: string }

/** Writes the answer to `req` on `socket`; the server reads the next request only after the call resolves. */
type Script = (req: Seen, socket: Socket) => void | Promise<void>;

/** A raw server: reads requests with content-length bodies, answers each through `script`. */
function rawServer(): { server: Server; seen: Seen[]; connections: () => number; script: { fn: Script } } {
  const seen: Seen[] = [];
  let count = 0;
  const script = { fn: ((_r, s) => void s.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok')) as Script };
  const server = createServer((socket) => {
    count++;
    socket.on('error', () => {});
    let buf = Buffer.alloc(0);
    let busy = false;
    const pump = async (): Promise<void> => {
      if (busy) return;
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buf.subarray(0, end).toString('latin1');
      const [line, ...lines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const l of lines) { const i = l.indexOf(':'); headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim(); }
      const length = Number(headers['content-length'] ?? 0);
      if (buf.length < end + 4 + length) return;
      const body = buf.subarray(end + 4, end + 4 + length).toString('utf8');
      const raw = buf.subarray(0, end + 4 + length).toString('latin1');
      buf = buf.subarray(end + 4 + length);
      const [method, path] = line!.split(' ');
      const req = { method: method!, path: path!, headers, body, raw };
      seen.push(req);
      busy = true;
      await script.fn(req, socket);
      busy = false;
      void pump();
    };
    socket.on('data', (d) => { buf = Buffer.concat([buf, d]); void pump(); });
  });
  return { server, seen, connections: () => count, script };
}

interface Outcome { status: number; head: AnswerHead; headers: Record<string, string | string[]>; body: string; trailers: Record<string, string | string[]> }

function call(pool: OriginClients, path = '/', opts: { method?: string; headers?: Record<string, string>; body?: string; onHeaders?: (c: CallController) => void } = {}): Promise<Outcome> {
  return new Promise((ok, fail) => {
    const out: Outcome = { status: 0, head: AnswerHead.EMPTY, headers: {}, body: '', trailers: {} };
    pool.dispatch({ path, method: opts.method ?? 'POST', headers: opts.headers ?? {}, body: opts.body ?? 'hi' }, {
      onResponseStart(c, status, head) { out.status = status; out.head = head; out.headers = recordOf(head); opts.onHeaders?.(c); },
      onResponseData(_c, chunk) { out.body += chunk.toString(); },
      onResponseEnd(_c, trailers) { out.trailers = recordOf(trailers); ok(out); },
      onResponseError(_c, err) { fail(err); },
    });
  });
}

const OPTIONS: OriginOptions = { connectTimeoutMs: 300, headersTimeoutMs: 300, bodyTimeoutMs: 300, connections: undefined };
const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));
const NO_HANG = { timeout: 10_000 };

describe('the upstream HTTP/1.1 client', () => {
  const raw = rawServer();
  let origin: string;
  let pool: OriginClients;

  before(async () => {
    await new Promise<void>((ok) => raw.server.listen(0, '127.0.0.1', ok));
    origin = `http://127.0.0.1:${(raw.server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((ok) => raw.server.close(() => ok())));

  /** A fresh pool per test, so that connection counts start from nothing. */
  const fresh = (opts: Partial<OriginOptions> = {}) => {
    pool = new OriginClients(origin, { ...OPTIONS, ...opts });
    raw.seen.length = 0;
    return raw.connections();
  };
  const answer = (s: Script) => { raw.script.fn = s; };

  test('the request head: host, the body\'s length in bytes, the caller\'s headers; a GET with no body says no length', NO_HANG, async () => {
    fresh();
    answer((_r, s) => void s.write('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n'));
    await call(pool, '/v1/x?y=1', { headers: { authorization: 'Bearer k', 'content-type': 'application/json' }, body: 'é€🙂' });
    await call(pool, '/v1/models', { method: 'GET', body: '' });
    const [post, get] = raw.seen;
    assert.equal(post!.raw.split('\r\n')[0], 'POST /v1/x?y=1 HTTP/1.1');
    assert.equal(post!.headers.host, origin.slice('http://'.length));
    assert.equal(post!.headers['content-length'], '9');
    assert.equal(post!.headers.authorization, 'Bearer k');
    assert.equal(post!.body, 'é€🙂');
    assert.equal(post!.headers['transfer-encoding'], undefined);
    assert.equal(get!.raw, `GET /v1/models HTTP/1.1\r\nhost: ${origin.slice('http://'.length)}\r\n\r\n`);
    await pool.close();
  });

  test('a head with obs-text goes as latin1 bytes and its body as UTF-8, as an ASCII head and its body do', NO_HANG, async () => {
    fresh();
    answer((_r, s) => void s.write('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n'));
    // An ASCII head and a string body go in one write; any other head keeps its own encoding.
    await call(pool, '/a', { headers: { 'x-v': 'caf\u00e9' }, body: 'é€🙂' });
    await call(pool, '/caf\u00e9', { body: 'é€🙂' });
    await call(pool, '/b', { headers: { 'x-v': 'plain' }, body: 'é€🙂' });
    // Checked names and values are remembered: the same ones again are written the same way.
    await call(pool, '/a', { headers: { 'x-v': 'caf\u00e9' }, body: 'é€🙂' });
    await call(pool, '/b', { headers: { 'x-v': 'plain' }, body: 'é€🙂' });
    const [obsHeader, obsPath, ascii, obsAgain, asciiAgain] = raw.seen;
    // The test server reads the head as latin1: one byte 0xe9 reads back as é, UTF-8's two bytes would not.
    assert.equal(obsHeader!.headers['x-v'], 'caf\u00e9');
    assert.equal(obsAgain!.headers['x-v'], 'caf\u00e9');
    assert.equal(obsPath!.path, '/caf\u00e9');
    assert.equal(ascii!.headers['x-v'], 'plain');
    assert.equal(asciiAgain!.headers['x-v'], 'plain');
    for (const r of [obsHeader, obsPath, ascii, obsAgain, asciiAgain]) {
      assert.equal(r!.body, 'é€🙂');
      assert.equal(r!.headers['content-length'], '9');
    }
    await pool.close();
  });

  test('a head that would smuggle a second request is refused before a byte is sent, and the connection stays good', NO_HANG, async () => {
    const before = fresh({ connections: 1 });
    answer((_r, s) => void s.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok'));
    await call(pool, '/first');
    await assert.rejects(call(pool, '/a HTTP/1.1\r\nx: y'), /invalid request path/);
    await assert.rejects(call(pool, '/a', { headers: { 'x-evil': 'a\r\nGET /b HTTP/1.1' } }), /invalid x-evil header/);
    await assert.rejects(call(pool, '/a', { headers: { 'bad name': 'v' } }), /invalid header name/);
    // A refused name or value is refused every time: only what passed is remembered as checked.
    await assert.rejects(call(pool, '/a', { headers: { 'x-evil': 'a\r\nGET /b HTTP/1.1' } }), /invalid x-evil header/);
    await assert.rejects(call(pool, '/a', { headers: { 'bad name': 'v' } }), /invalid header name/);
    await assert.rejects(call(pool, '/a', { headers: { 'content-length': '1\r\nx: y' } }), /invalid content-length header/);
    // Headers the connection owns cannot be overridden: the length is the body's, the host the origin's.
    await call(pool, '/owned', { headers: { 'content-length': '999', host: 'elsewhere', 'transfer-encoding': 'chunked' } });
    assert.deepEqual(raw.seen.map((r) => r.path), ['/first', '/owned']);
    assert.equal(raw.seen[1]!.headers['content-length'], '2');
    assert.equal(raw.seen[1]!.headers.host, origin.slice('http://'.length));
    assert.equal(raw.seen[1]!.headers['transfer-encoding'], undefined);
    assert.equal(raw.connections() - before, 1, 'refused calls cost no connection');
    await pool.close();
  });

  test('chunked frames that arrive in one read reach the handler as one piece, joined; a later read\'s frames as another', NO_HANG, async () => {
    fresh();
    const euro = Buffer.from('€');
    // Small frames, a 3-byte character split between two of them: an SSE stream's chunks, each written as a frame.
    const frames = [Buffer.from('ab'), euro.subarray(0, 1), Buffer.concat([euro.subarray(1), Buffer.from('cd')]), ...Array.from({ length: 20 }, (_, i) => Buffer.from(`f${i};`))];
    const framed = frames.flatMap((f) => [Buffer.from(`${f.length.toString(16)}\r\n`), f, Buffer.from('\r\n')]);
    answer(async (_r, s) => {
      s.write(Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n'), ...framed]));
      await sleep(50);
      s.write('2\r\nxy\r\n3\r\nz!?\r\n0\r\n\r\n');
    });
    const pieces: Buffer[] = [];
    await new Promise<void>((ok, fail) => pool.dispatch({ path: '/burst', method: 'GET', headers: {} }, {
      // A view of the thread's read buffer, valid during the call: kept, it is copied.
      onResponseData(_c, chunk) { pieces.push(Buffer.from(chunk)); },
      onResponseEnd() { ok(); },
      onResponseError(_c, err) { fail(err); },
    }));
    // One piece per read, the frames of each joined.
    assert.deepEqual(pieces.map((p) => p.toString('utf8')), [Buffer.concat(frames).toString('utf8'), 'xyz!?']);
    assert.equal(pieces[0]!.toString('utf8'), `ab€cd${Array.from({ length: 20 }, (_, i) => `f${i};`).join('')}`);
    await pool.close();
  });

  test('bodies by length, chunked with trailers, and delimited by the close are read whole', NO_HANG, async () => {
    const before = fresh();
    answer((req, s) => {
      if (req.path === '/length') s.write('HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello');
      if (req.path === '/chunked') s.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ntrailer: x-sum\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\nx-sum: 5\r\n\r\n');
      if (req.path === '/close') { s.write('HTTP/1.1 200 OK\r\n\r\nuntil the end'); s.end(); }
      if (req.path === '/http10') { s.write('HTTP/1.0 200 OK\r\ncontent-length: 3\r\n\r\nold'); s.end(); }
    });
    assert.equal((await call(pool, '/length')).body, 'hello');
    const chunked = await call(pool, '/chunked');
    assert.equal(chunked.body, 'abcde');
    assert.deepEqual(chunked.trailers, { 'x-sum': '5' });
    assert.equal(raw.connections() - before, 1, 'both reused one connection');
    assert.equal((await call(pool, '/close')).body, 'until the end');
    assert.equal((await call(pool, '/http10')).body, 'old');
    assert.equal(raw.connections() - before, 2, 'the answer read to the close took the kept-alive connection, and ended it');
    assert.equal((await call(pool, '/length')).body, 'hello');
    assert.equal(raw.connections() - before, 3, 'an HTTP/1.0 answer without keep-alive ends its connection too');
    await pool.close();
  });

  test('interim 1xx answers are skipped; a head split across reads, repeated headers, empty values and trailing whitespace are read as node reads them', NO_HANG, async () => {
    fresh();
    answer(async (_r, s) => {
      s.write('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n');
      const head = 'HTTP/1.1 201 Created\r\nX-Multi: a\r\nx-multi: b\r\nset-cookie: c=1\r\nx-empty:\r\nx-trailing: v \t \r\nx-long-header-name: a value split across reads\r\ncontent-length: 4\r\n\r\n';
      for (let i = 0; i < head.length; i += 7) { s.write(head.slice(i, i + 7)); await sleep(1); }
      s.write('done');
    });
    const out = await call(pool, '/');
    assert.equal(out.status, 201);
    assert.equal(out.body, 'done');
    assert.deepEqual(out.headers['x-multi'], ['a', 'b']);
    assert.deepEqual(out.headers['set-cookie'], ['c=1']);
    assert.equal(out.headers['x-empty'], '');
    assert.equal(out.headers['x-trailing'], 'v', 'whitespace after a value is not part of it');
    assert.equal(out.headers['x-long-header-name'], 'a value split across reads');
    assert.equal(out.headers.link, undefined, 'the interim answer\'s headers are not the final one\'s');
    await pool.close();
  });

  test('a head of many headers (OpenAI answers with about twenty) is read as a head of a few is', NO_HANG, async () => {
    fresh();
    const many = Array.from({ length: 24 }, (_, i) => `X-Header-${i}: value ${i}`);
    answer((_r, s) => {
      s.write(`HTTP/1.1 200 OK\r\n${many.join('\r\n')}\r\nx-multi: a\r\nX-Multi: b\r\nset-cookie: c=1\r\nset-cookie: d=2\r\nx-empty:\r\ncontent-length: 2\r\n\r\nok`);
    });
    const out = await call(pool, '/');
    assert.equal(out.status, 200);
    assert.equal(out.body, 'ok');
    for (let i = 0; i < 24; i++) assert.equal(out.headers[`x-header-${i}`], `value ${i}`);
    assert.deepEqual(out.headers['x-multi'], ['a', 'b']);
    assert.deepEqual(out.headers['set-cookie'], ['c=1', 'd=2']);
    assert.equal(out.headers['x-empty'], '');
    assert.equal(out.headers['content-length'], '2');
    assert.deepEqual(Object.keys(out.headers).length, 24 + 4);
    await pool.close();
  });

  test('a head is read by name without case, a repeated header by name gives its first value, and the rate limits pass back joined', NO_HANG, async () => {
    fresh();
    answer((_r, s) => {
      s.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-RateLimit-Limit-Requests: 10\r\nRetry-After: 3\r\nx-ratelimit-limit-requests: 20\r\n'
        + 'retry-after: 4\r\nX-Ratelimit: not a limit\r\nretry-after-ms: 3000\r\nx-other: z\r\nX-RateLimit-Limit-Images: 5\r\n'
        + 'x-ratelimit-limit-requestz: 6\r\nContent-Length: 2\r\n\r\nok');
    });
    const { head, body } = await call(pool, '/');
    assert.equal(body, 'ok', 'the body is read by the mixed-case Content-Length');
    assert.equal(head.size, 11);
    assert.equal(head.get('content-type'), 'application/json');
    assert.equal(head.get('retry-after'), '3');
    assert.equal(head.get('x-missing'), undefined);
    assert.equal(head.get('x-ratelimit-limit-request'), undefined, 'a name is matched whole');
    assert.equal(head.name(1), 'x-ratelimit-limit-requests');
    assert.ok(head.nameIs(1, 'x-ratelimit-limit-requests') && head.nameStartsWith(1, 'x-ratelimit-'));
    assert.ok(!head.nameStartsWith(5, 'x-ratelimit-'), 'a name shorter than the prefix does not start with it');
    // Names OpenAI does not send pass too, lower-cased; one a letter off a known name is itself.
    assert.deepEqual(passHeaders(head), [['x-ratelimit-limit-requests', '10, 20'], ['retry-after', '3, 4'], ['retry-after-ms', '3000'],
      ['x-ratelimit-limit-images', '5'], ['x-ratelimit-limit-requestz', '6']]);
    await pool.close();
  });

  test('any head, cut into reads anywhere, is read as written: names without case, values without the whitespace after them', NO_HANG, async () => {
    fresh();
    // Names of the x- kind, so none means anything to the connection (a length, a close).
    const header = fc.record({
      name: fc.stringMatching(/^[Xx]-[A-Za-z0-9-]{0,24}$/),
      value: fc.oneof(fc.constant(''), fc.stringMatching(/^[!-~]([ -~]{0,30}[!-~])?$/)),
      after: fc.constantFrom('', ' ', ' \t '),
    });
    await fc.assert(fc.asyncProperty(fc.array(header, { minLength: 1, maxLength: 24 }), fc.uniqueArray(fc.nat(), { maxLength: 4 }), async (headers, cuts) => {
      const text = `HTTP/1.1 200 OK\r\n${headers.map((h) => `${h.name}: ${h.value}${h.after}\r\n`).join('')}content-length: 2\r\n\r\nok`;
      const at = [...cuts.map((c) => c % text.length), text.length].sort((x, y) => x - y);
      answer(async (_r, s) => {
        let from = 0;
        for (const to of at) { s.write(text.slice(from, to)); from = to; await sleep(2); }
      });
      const { head, body } = await call(pool, '/');
      assert.equal(body, 'ok');
      assert.equal(head.size, headers.length + 1);
      headers.forEach((h, i) => {
        assert.equal(head.name(i), h.name.toLowerCase());
        assert.equal(head.value(i), h.value);
      });
    }), { numRuns: 40 });
    await pool.close();
  });

  test('keep-alive: the upstream\'s timeout is trusted less a second, and a connection idle past it is closed', NO_HANG, async () => {
    const before = fresh();
    answer((req, s) => void s.write(`HTTP/1.1 200 OK\r\nKeep-Alive: timeout=${req.path.slice(1)}\r\ncontent-length: 0\r\n\r\n`));
    await call(pool, '/1');
    await call(pool, '/1');
    assert.equal(raw.connections() - before, 2, 'a one-second keep-alive is too short to reuse');
    await call(pool, '/2');
    await call(pool, '/2');
    assert.equal(raw.connections() - before, 3, 'a two-second one is reused');
    assert.equal(pool.clients, 1);
    const idleSince = Date.now();
    assert.ok(await eventually(() => pool.clients === 0, 3_000), 'the idle connection was kept past its timeout');
    const idleMs = Date.now() - idleSince;
    assert.ok(idleMs >= 800 && idleMs < 1_800, `closed after ${idleMs} ms idle, against about 1,000`);
    await pool.close();
  });

  test('a call the upstream drops unheard on a kept-alive connection (it closed it idle as the call went) is sent once more, on a new one', NO_HANG, async () => {
    for (const drop of ['end', 'reset'] as const) {
      const before = fresh();
      // The second call on the first connection meets the upstream closing it; every other call is answered.
      answer((req, s) => {
        if (req.path === '/second' && raw.connections() - before === 1) return void (drop === 'end' ? s.end() : s.resetAndDestroy());
        s.write(`HTTP/1.1 200 OK\r\ncontent-length: ${req.path.length}\r\n\r\n${req.path}`);
      });
      assert.equal((await call(pool, '/first')).body, '/first');
      assert.equal((await call(pool, '/second')).body, '/second', drop);
      assert.equal(raw.connections() - before, 2, 'the replay went on a new connection');
      assert.deepEqual(raw.seen.map((r) => r.path), ['/first', '/second', '/second']);
      await pool.close();
    }
  });

  test('not replayed: a call on a new connection, a call the upstream answered a byte of, and a replay dropped in turn', NO_HANG, async () => {
    let before = fresh();
    // A new connection: the upstream did read the call, and closed on it.
    answer((_r, s) => void s.end());
    await assert.rejects(call(pool, '/only'), /other side closed/);
    assert.equal(raw.connections() - before, 1);
    await pool.close();

    before = fresh();
    answer((req, s) => {
      if (req.path === '/first') return void s.write('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n');
      // Part of a head, then the close: the upstream was answering, so it had read the call.
      s.end('HTTP/1.1 200');
    });
    await call(pool, '/first');
    await assert.rejects(call(pool, '/partial'), /other side closed|does not match/);
    assert.equal(raw.seen.filter((r) => r.path === '/partial').length, 1, 'sent once');
    await pool.close();

    before = fresh();
    answer((req, s) => (req.path === '/first' ? void s.write('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n') : void s.end()));
    await call(pool, '/first');
    await assert.rejects(call(pool, '/dropped'), /other side closed/);
    assert.equal(raw.seen.filter((r) => r.path === '/dropped').length, 2, 'sent twice, and no more');
    assert.equal(raw.connections() - before, 2);
    await pool.close();
  });

  test('bytes after the answer (an answer nobody asked for) cost the connection, not the call', NO_HANG, async () => {
    const before = fresh();
    answer((req, s) => void s.write(req.path === '/extra'
      ? 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokHTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nstale'
      : 'HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nfresh'));
    assert.equal((await call(pool, '/extra')).body, 'ok');
    assert.equal((await call(pool, '/next')).body, 'fresh', 'the next call never reads the stale answer');
    assert.equal(raw.connections() - before, 2);
    await pool.close();
  });

  test('an answer that comes before the upstream read the whole request is not followed on that connection', NO_HANG, async () => {
    const before = fresh();
    const big = 'x'.repeat(8 * 1024 * 1024);
    const early = createServer((s) => {
      s.on('error', () => {});
      // Answers at the first bytes, reads nothing more, and keeps the connection.
      s.once('data', () => { s.pause(); s.write('HTTP/1.1 413 Payload Too Large\r\ncontent-length: 3\r\n\r\nbig'); });
    });
    await new Promise<void>((ok) => early.listen(0, '127.0.0.1', ok));
    const earlyPool = new OriginClients(`http://127.0.0.1:${(early.address() as AddressInfo).port}`, OPTIONS);
    const out = await call(earlyPool, '/', { body: big });
    assert.equal(out.status, 413);
    assert.ok(await eventually(() => earlyPool.clients === 0, 2_000), 'the connection with the unread request was kept');
    await earlyPool.close();
    early.close();
    assert.equal(raw.connections(), before);
  });

  test('malformed answers, oversized heads and upgrades fail the call with what went wrong', NO_HANG, async () => {
    fresh();
    answer((req, s) => {
      if (req.path === '/garbage') s.write('HTTP/1.1 200 OK\r\ncontent-length: nope\r\n\r\n');
      if (req.path === '/huge') s.write(`HTTP/1.1 200 OK\r\nx-big: ${'a'.repeat(20_000)}\r\ncontent-length: 0\r\n\r\n`);
      // The same head over many reads: the cap is met by pieces handed on at the end of a read, not of the head.
      if (req.path === '/huge-in-reads') {
        s.write('HTTP/1.1 200 OK\r\n');
        let sent = 0;
        const more = setInterval(() => {
          if (s.destroyed || sent++ === 40) return clearInterval(more);
          s.write(`x-part-${sent}: ${'b'.repeat(500)}\r\n`);
        }, 2);
      }
      if (req.path === '/upgrade') s.write('HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\nupgrade: websocket\r\n\r\n');
      if (req.path === '/truncated') { s.write('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc'); s.destroy(); }
    });
    await assert.rejects(call(pool, '/garbage'), /does not match the HTTP\/1.1 protocol/);
    await assert.rejects(call(pool, '/huge'), /more than 16384 bytes of headers/);
    await assert.rejects(call(pool, '/huge-in-reads'), /more than 16384 bytes of headers/);
    await assert.rejects(call(pool, '/upgrade'), /bad upgrade/);
    await assert.rejects(call(pool, '/truncated'), /other side closed/);
    assert.ok(await eventually(() => pool.clients === 0, 2_000));
    await pool.close();
  });

  test('a handler that throws inside the parse fails its call with that error; the process and the pool go on', NO_HANG, async () => {
    fresh({ connections: 1 });
    answer((_r, s) => void s.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok'));
    const failed = await new Promise<Error>((ok) => {
      pool.dispatch({ path: '/', method: 'POST', headers: {}, body: '' }, {
        onResponseData() { throw new Error('handler bug'); },
        onResponseError(_c, err) { ok(err); },
      });
    });
    assert.equal(failed.message, 'handler bug');
    assert.equal((await call(pool, '/after')).body, 'ok');
    await pool.close();
  });

  test('headers and body timeouts; a call its caller paused does not time out', NO_HANG, async () => {
    fresh();
    answer(async (req, s) => {
      if (req.path === '/no-head') return;
      if (req.path === '/stall') return void s.write('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc');
      s.write('HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nabc');
      await sleep(700);
      s.write('def');
    });
    const t0 = Date.now();
    await assert.rejects(call(pool, '/no-head'), /Headers Timeout Error/);
    const headMs = Date.now() - t0;
    assert.ok(headMs >= 290 && headMs < 1_000, `headers timeout after ${headMs} ms`);
    await assert.rejects(call(pool, '/stall'), /Body Timeout Error/);
    // Paused on its headers for longer than the body timeout, while the upstream waits too.
    let controller: CallController | undefined;
    const paused = call(pool, '/paused', { onHeaders: (c) => { controller = c; c.pause(); } });
    await sleep(500);
    assert.equal(controller!.paused, true);
    controller!.resume();
    assert.equal((await paused).body, 'abcdef');
    await pool.close();
  });

  test('an IPv6 origin: the literal is connected to, and the host header keeps its brackets', NO_HANG, async (t) => {
    const v6 = createServer((s) => {
      s.on('error', () => {});
      s.once('data', (d) => {
        const host = /\r\nhost: ([^\r]+)/.exec(d.toString('latin1'))?.[1] ?? '';
        s.write(`HTTP/1.1 200 OK\r\ncontent-length: ${host.length}\r\n\r\n${host}`);
      });
    });
    const listening = await new Promise<boolean>((ok) => { v6.once('error', () => ok(false)); v6.listen(0, '::1', () => ok(true)); });
    // A machine with IPv6 turned off has no ::1 to listen on: there is nothing to connect to.
    if (!listening) return void t.skip('this machine has no IPv6 loopback');
    const port = (v6.address() as AddressInfo).port;
    const v6Pool = new OriginClients(`http://[::1]:${port}`, OPTIONS);
    assert.equal((await call(v6Pool, '/')).body, `[::1]:${port}`);
    await v6Pool.close();
    v6.close();
  });

  test('a TLS handshake that never ends is a connect timeout', NO_HANG, async (t) => {
    const accepted: Socket[] = [];
    const silent = createServer((s) => { s.on('error', () => {}); accepted.push(s); });
    // Even when an assertion fails or the test times out, nothing of it keeps the file running.
    t.after(() => { for (const s of accepted) s.destroy(); silent.close(); });
    await new Promise<void>((ok) => silent.listen(0, '127.0.0.1', ok));
    const tlsPool = new OriginClients(`https://127.0.0.1:${(silent.address() as AddressInfo).port}`, OPTIONS);
    await assert.rejects(call(tlsPool, '/'), /Connect Timeout Error/);
    assert.ok(await eventually(() => tlsPool.clients === 0, 2_000));
    // A call dropped as it was handed over leaves its connection idle while it still connects:
    // the connect deadline still holds it, not the 30 s keep-alive one.
    await assert.rejects(new Promise((ok, fail) => tlsPool.dispatch({ path: '/', method: 'GET' }, {
      onRequestStart(c) { c.abort(new Error('caller left')); },
      onResponseEnd: ok,
      onResponseError(_c, err) { fail(err); },
    })), /caller left/);
    assert.equal(tlsPool.clients, 1);
    assert.ok(await eventually(() => tlsPool.clients === 0, 2_000), 'the connection still connecting was kept past its connect deadline');
    await tlsPool.close();
  });
});
