// The front-end contract on both servers: body cap, keep-alive, unknown paths;
// draining, its deadline, and a request that ends even when settling it fails.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest, Agent } from 'node:http';
import { HTTP_KINDS, startGateway, type TestGateway } from './helpers/gateway.js';
import { stopTestPostgres } from './helpers/pg.js';
import { rawExchange } from './helpers/raw-http.js';

after(stopTestPostgres);

function raw(url: string, opts: { method: string; path: string; headers?: Record<string, string>; body?: string; agent?: Agent }) {
  return new Promise<{ status: number; body: string; reused: boolean; headers: Record<string, unknown> }>((ok, fail) => {
    const u = new URL(url);
    const req = httpRequest({ host: u.hostname, port: u.port, method: opts.method, path: opts.path, headers: opts.headers, agent: opts.agent }, (res) => {
      let body = '';
      res.on('data', (c) => { body += c; });
      res.on('end', () => ok({ status: res.statusCode!, body, reused: req.reusedSocket, headers: res.headers }));
    });
    req.on('error', fail);
    req.end(opts.body);
  });
}

for (const http of HTTP_KINDS) {
  describe(`HTTP front end: ${http}`, () => {
    let gw: TestGateway;
    let key: string;
    before(async () => {
      gw = await startGateway({ http, config: { server: { body_limit_bytes: 4096 }, organizations: [{ id: 'acme', models: ['mock-echo'] }] } });
      key = await gw.key('acme');
    });
    after(() => gw.close());

    test('a body over the cap is 413 with a JSON error, declared or chunked', async () => {
      const big = JSON.stringify({ model: 'mock-echo', messages: [{ role: 'user', content: 'x'.repeat(10_000) }] });
      const declared = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: big });
      assert.equal(declared.status, 413);
      assert.equal(((await declared.json()) as any).error.code, 'body_too_large');
      const chunked = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST', headers: { authorization: `Bearer ${key}` }, duplex: 'half',
        body: new ReadableStream({ start(c) { for (let i = 0; i < 5; i++) c.enqueue(new TextEncoder().encode(big.slice(i * 2100, (i + 1) * 2100))); c.close(); } }),
      } as RequestInit);
      assert.equal(chunked.status, 413);
      // The server still serves afterwards.
      const ok = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: JSON.stringify({ model: 'mock-echo', messages: [{ role: 'user', content: 'ok' }] }) });
      assert.equal(ok.status, 200);
    });

    test('bodies that arrive in pieces on two connections at once are each their own request\'s', async () => {
      // Each piece is copied out of the server's read buffer into a pool both connections share:
      // pieces written in turn on the two must still add up to each one's own body.
      const bodies = ['alpha', 'omega'].map((w) => JSON.stringify({ model: 'mock-echo', messages: [{ role: 'user', content: `${w} `.repeat(300).trim() }] }));
      const feeds = bodies.map(() => new TransformStream<Uint8Array, Uint8Array>());
      const answers = bodies.map((b, i) => fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-length': String(b.length) }, duplex: 'half', body: feeds[i]!.readable,
      } as RequestInit));
      const writers = feeds.map((f) => f.writable.getWriter());
      for (let at = 0; at < bodies[0]!.length; at += 700) {
        for (let i = 0; i < 2; i++) {
          await writers[i]!.write(new TextEncoder().encode(bodies[i]!.slice(at, at + 700)));
          await new Promise((r) => setTimeout(r, 5));
        }
      }
      for (const w of writers) await w.close();
      for (let i = 0; i < 2; i++) {
        const res = await answers[i]!;
        assert.equal(res.status, 200);
        assert.equal(((await res.json()) as any).choices[0].message.content, JSON.parse(bodies[i]!).messages[0].content);
      }
    });

    test('keep-alive: consecutive requests reuse one connection', async () => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const body = JSON.stringify({ model: 'mock-echo', messages: [{ role: 'user', content: 'hi' }] });
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
      const a = await raw(gw.url, { method: 'POST', path: '/v1/chat/completions', headers, body, agent });
      const b = await raw(gw.url, { method: 'POST', path: '/v1/chat/completions', headers, body, agent });
      agent.destroy();
      assert.equal(a.status, 200);
      assert.equal(b.status, 200);
      assert.equal(b.reused, true);
    });

    test('unknown paths are 404 and wrong methods 405, as JSON with a request id', async () => {
      const missing = await raw(gw.url, { method: 'GET', path: '/v2/nothing' });
      assert.equal(missing.status, 404);
      assert.equal(JSON.parse(missing.body).error.code, 'route_not_found');
      const wrong = await raw(gw.url, { method: 'GET', path: '/v1/chat/completions', headers: { authorization: `Bearer ${key}` } });
      assert.equal(wrong.status, 405);
      assert.match(String(wrong.headers['x-request-id']), /^req_/);
      // RFC 9110 asks a 405 to say what the path takes.
      assert.equal(wrong.headers.allow, 'POST');
      assert.equal((await raw(gw.url, { method: 'DELETE', path: '/v1/models' })).headers.allow, 'GET, HEAD');
      // JSON is never read as a page: the 404 echoes the caller's path.
      assert.equal(missing.headers['x-content-type-options'], 'nosniff');
    });

    test('the console revalidates: a matching If-None-Match is a 304 with no body, and the connection serves the next request', async () => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      try {
        const page = await raw(gw.url, { method: 'GET', path: '/ui', agent });
        assert.equal(page.status, 200);
        const etag = String(page.headers.etag);
        assert.match(etag, /^"[^"]+"$/);
        for (const [method, tag] of [['GET', etag], ['GET', `"nope", W/${etag}`], ['GET', '*'], ['HEAD', etag]] as const) {
          const again = await raw(gw.url, { method, path: '/ui', headers: { 'if-none-match': tag }, agent });
          assert.equal(again.status, 304, `${method} ${tag}`);
          assert.equal(again.body, '');
          assert.equal(again.headers.etag, etag);
          assert.equal(again.headers['cache-control'], 'no-cache');
          assert.equal(again.headers['content-security-policy'], page.headers['content-security-policy']);
          assert.equal(again.headers['content-length'], undefined, 'a 304 does not say the page is empty');
        }
        // The status line whole, reason phrase and all (uWS wrote a bare `HTTP/1.1 304`).
        const { text } = await rawExchange(gw.url, `GET /ui HTTP/1.1\r\nHost: x\r\nIf-None-Match: ${etag}\r\nConnection: close\r\n\r\n`);
        assert.match(text, /^HTTP\/1\.1 304 Not Modified\r\n/, text.slice(0, 40));
        const changed = await raw(gw.url, { method: 'GET', path: '/ui', headers: { 'if-none-match': '"an-older-page"' }, agent });
        assert.equal(changed.status, 200);
        assert.equal(changed.body, page.body);
        // The 304s left the pooled connection good: this request is answered on it.
        const next = await raw(gw.url, { method: 'GET', path: '/healthz', agent });
        assert.equal(next.status, 200);
        assert.equal(next.reused, true);
      } finally {
        agent.destroy();
      }
    });

    test('a 204 says no Content-Length (RFC 9110 8.6), and the connection serves the next request', async () => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      try {
        const doomed = async () => {
          const made = await raw(gw.url, { method: 'POST', path: '/v1/api-keys', headers: { authorization: `Bearer ${key}` }, body: '{"name":"doomed"}', agent });
          assert.equal(made.status, 201);
          return JSON.parse(made.body).id as string;
        };
        const del = await raw(gw.url, { method: 'DELETE', path: `/v1/api-keys/${await doomed()}`, headers: { authorization: `Bearer ${key}` }, agent });
        assert.equal(del.status, 204);
        assert.equal(del.body, '');
        assert.equal(del.headers['content-length'], undefined);
        const next = await raw(gw.url, { method: 'GET', path: '/healthz', agent });
        assert.equal(next.status, 200);
        assert.equal(next.reused, true);
        // Asked to close: the 204 says so, and the server closes after it.
        const { text, closedByServer } = await rawExchange(gw.url, `DELETE /v1/api-keys/${await doomed()} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nConnection: close\r\n\r\n`, 2_000);
        assert.match(text, /^HTTP\/1\.1 204 No Content\r\n/);
        assert.doesNotMatch(text, /content-length/i);
        assert.match(text, /\r\nconnection: close\r\n/i);
        assert.equal(closedByServer, true);
      } finally {
        agent.destroy();
      }
    });

    test('a request that says Connection: close gets its answer, though more bytes follow it on the connection', async () => {
      // node's parser calls the bytes after such a request an error; answering that error took the connection from the answer still on its way.
      const auth = `Authorization: Bearer ${key}\r\n`;
      const { text } = await rawExchange(gw.url, `GET /v1/models HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\nGET /v1/models HTTP/1.1\r\nHost: x\r\n${auth}\r\n`, 1_000);
      assert.match(text, /^HTTP\/1\.1 200 OK\r\n/, text.slice(0, 200));
      assert.ok(text.includes('"object":"list"'), text.slice(0, 300));
      assert.ok(!/HTTP\/1\.1 4\d\d/.test(text), text);
    });

    test('a method no path takes is 501 as JSON on both front ends, whatever its case or path', async () => {
      // FOO never reaches node's router (its parser refuses it), PROPFIND and `get` do on uWS: one answer for all.
      for (const [method, path] of [['FOO', '/v1/models'], ['PROPFIND', '/v1/chat/completions'], ['get', '/healthz'], ['OPTIONS', '/v2/nothing']] as const) {
        const { text } = await rawExchange(gw.url, `${method} ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
        assert.match(text, /^HTTP\/1\.1 501 Not Implemented\r\n/, `${method} ${path}`);
        assert.match(text, /\r\nx-request-id: req_/i);
        const rest = text.slice(text.indexOf('\r\n\r\n') + 4);
        // node frames the router's answer in chunks, uWS with a length.
        const body = JSON.parse(/\r\ntransfer-encoding: chunked\r\n/i.test(text) ? rest.split('\r\n')[1]! : rest);
        assert.equal(body.error.code, 'method_not_implemented', `${method} ${path}`);
        assert.equal(body.error.type, 'invalid_request_error');
      }
    });

    test('health and metrics endpoints answer without a key, and HEAD as GET without the body', async () => {
      assert.equal((await raw(gw.url, { method: 'GET', path: '/healthz' })).status, 200);
      for (const path of ['/healthz', '/readyz', '/metrics']) {
        const head = await raw(gw.url, { method: 'HEAD', path });
        assert.equal(head.status, 200, path);
        assert.equal(head.body, '', path);
      }
      const m = await raw(gw.url, { method: 'GET', path: '/metrics' });
      assert.equal(m.status, 200);
      assert.match(m.body, /sluice_requests_total/);
    });
  });
}

describe('draining on uWS', () => {
  test('while in-flight requests finish, a new request on a kept-alive connection gets 503 shutting_down', async () => {
    const { startOpenAIMock, OPENAI_MOCK_KEY } = await import('./mocks/openai-mock.js');
    const mock = await startOpenAIMock();
    mock.fault = 'slow-chunks';
    mock.slowMs = 100;
    const gw = await startGateway({
      http: 'uws',
      env: { SLUICE_T_DRAIN_KEY: OPENAI_MOCK_KEY },
      config: {
        providers: { up: { kind: 'openai', base_url: `${mock.url}/v1`, api_key_env: 'SLUICE_T_DRAIN_KEY' } },
        models: [{ id: 'up-model', provider: 'up', context_window: 8_000, pricing: { prompt: 1, completion: 1 } }],
        organizations: [{ id: 'acme', models: ['up-model'] }],
      },
    });
    const key = await gw.key('acme');
    const idle = new Agent({ keepAlive: true, maxSockets: 1 });
    assert.equal((await raw(gw.url, { method: 'GET', path: '/healthz', agent: idle })).status, 200);
    const streaming = fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: 'up-model', stream: true, messages: [{ role: 'user', content: 'a b c d e' }] }),
    }).then((r) => r.text());
    await new Promise((r) => setTimeout(r, 150));
    const closing = gw.app.close();
    const late = await raw(gw.url, { method: 'GET', path: '/healthz', agent: idle });
    assert.equal(late.status, 503);
    assert.equal(JSON.parse(late.body).error.code, 'shutting_down');
    assert.ok((await streaming).trimEnd().endsWith('data: [DONE]'), 'the in-flight stream finished');
    await closing;
    idle.destroy();
    await gw.db.drop();
    await mock.close();
  });
});

/** A gateway with a 300 ms shutdown grace, before one upstream model at `upstream`. */
const graceGateway = (http: (typeof HTTP_KINDS)[number], upstream: string, upstreamKey: string) => startGateway({
  http,
  env: { SLUICE_T_GRACE_KEY: upstreamKey },
  config: {
    server: { shutdown_grace_ms: 300 },
    providers: { up: { kind: 'openai', base_url: `${upstream}/v1`, api_key_env: 'SLUICE_T_GRACE_KEY' } },
    models: [{ id: 'up-model', provider: 'up', context_window: 8_000, pricing: { prompt: 1, completion: 1 } }],
    organizations: [{ id: 'acme', models: ['up-model'] }],
  },
});

for (const http of HTTP_KINDS) {
  describe(`the drain deadline on ${http}`, () => {
    test('a stream still running after server.shutdown_grace_ms is cut, and close() returns', { timeout: 30_000 }, async () => {
      const { startOpenAIMock, OPENAI_MOCK_KEY } = await import('./mocks/openai-mock.js');
      const mock = await startOpenAIMock();
      mock.fault = 'slow-chunks';
      mock.slowMs = 2_000;
      const gw = await graceGateway(http, mock.url, OPENAI_MOCK_KEY);
      try {
        const key = await gw.key('acme');
        // Five words two seconds apart: ten seconds of stream, far past the grace.
        const res = await fetch(`${gw.url}/v1/chat/completions`, {
          method: 'POST', headers: { authorization: `Bearer ${key}` },
          body: JSON.stringify({ model: 'up-model', stream: true, messages: [{ role: 'user', content: 'a b c d e' }] }),
        });
        assert.equal(res.status, 200);
        const rid = res.headers.get('x-request-id')!;
        const text = res.text().catch(() => 'dropped');
        const t0 = performance.now();
        await gw.app.close();
        const took = performance.now() - t0;
        assert.ok(took < 2_000, `close() took ${took.toFixed(0)} ms with a 300 ms grace`);
        const body = await text;
        assert.ok(!body.includes('[DONE]'), 'the stream was cut, not finished');
        // Cut with the SSE error event, not dropped, and the trace says why.
        assert.match(body, /event: error\ndata: .*"code":"shutting_down"/, body);
        const trace = await gw.traces.waitFor(rid);
        assert.deepEqual([trace.status_code, trace.error_code, trace.stream_aborted], [200, 'shutting_down', true]);
      } finally {
        await gw.db.drop();
        await mock.close();
      }
    });
  });
}

for (const http of HTTP_KINDS) {
  describe(`the drain deadline on ${http}, for calls still waiting on their upstream`, () => {
    test('a JSON call and a stream with no answer yet get 503 shutting_down when the grace runs out, and their traces say so', { timeout: 30_000 }, async () => {
      const { startFaultMock } = await import('./mocks/fault-mock.js');
      const mock = await startFaultMock();
      mock.scenario = { kind: 'hang' };
      const gw = await graceGateway(http, mock.url, 'k');
      try {
        const key = await gw.key('acme');
        const asked = mock.requests.length;
        const call = (stream: boolean) => fetch(`${gw.url}/v1/chat/completions`, {
          method: 'POST', headers: { authorization: `Bearer ${key}` },
          body: JSON.stringify({ model: 'up-model', stream, messages: [{ role: 'user', content: 'hi' }] }),
        }).then(async (res) => ({ status: res.status, rid: res.headers.get('x-request-id')!, body: await res.json() as any }), (err: Error) => ({ status: 0, rid: '', body: err.message }));
        const answers = Promise.all([call(false), call(true)]);
        // Both calls are with the upstream, which says nothing.
        while (mock.requests.length < asked + 2) await new Promise((r) => setTimeout(r, 10));
        const t0 = performance.now();
        await gw.app.close();
        assert.ok(performance.now() - t0 < 2_000, 'close() returns soon after the grace');
        for (const a of await answers) {
          assert.equal(a.status, 503, JSON.stringify(a.body));
          assert.equal(a.body.error.code, 'shutting_down');
          const trace = await gw.traces.waitFor(a.rid);
          assert.deepEqual([trace.status_code, trace.error_code], [503, 'shutting_down']);
        }
      } finally {
        await gw.db.drop();
        await mock.close();
      }
    });
  });
}

describe('a request whose settling fails', () => {
  test('still counts as ended: the drain does not wait out the grace for it, and the failure is logged', { timeout: 30_000 }, async () => {
    const logged: string[] = [];
    const { createLogger } = await import('../src/logger.js');
    const gw = await startGateway({
      config: { server: { shutdown_grace_ms: 10_000 }, organizations: [{ id: 'acme', models: ['mock-echo'] }] },
      logger: createLogger('error', { write: (line: string) => { logged.push(line); } }),
    });
    try {
      const key = await gw.key('acme');
      // The trace is recorded while the request settles: a sink that throws there is a bug in the reply path.
      gw.traces.record = () => { throw new Error('sink broke'); };
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST', headers: { authorization: `Bearer ${key}` },
        body: JSON.stringify({ model: 'mock-echo', messages: [{ role: 'user', content: 'hi' }] }),
      });
      assert.equal(res.status, 200);
      await res.text();
      await new Promise((r) => setTimeout(r, 50));
      assert.ok(logged.some((l) => l.includes('reply path failed') && l.includes('sink broke')), 'the failure is logged');
      const t0 = performance.now();
      await gw.app.close();
      const took = performance.now() - t0;
      assert.ok(took < 5_000, `close() waited ${took.toFixed(0)} ms for a request that had ended`);
    } finally {
      await gw.db.drop();
    }
  });
});
