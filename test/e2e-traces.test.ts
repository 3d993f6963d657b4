// Traces through the real pipeline (COPY into Postgres) and the Traces API:
// section 2.3's fields for JSON, stream, error and aborted requests, paging and
// filters, HEAD, tenant isolation, signed payload links, and the shutdown flush.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import pg from 'pg';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import { startGateway, type TestGateway } from './helpers/gateway.js';
import { readSse, UPSTREAM_KEY_ENV, chatAndNativeUpstreams } from './helpers/fixtures.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

const TRACE_FIELDS = ['api_key_id', 'completion_tokens', 'cost_usd', 'disclosed_bytes', 'latency_ms', 'model', 'organization_id', 'prompt_tokens',
  'provider', 'redactions', 'request_id', 'requested_model', 'route_reason', 'status_code', 'stream_aborted', 'streamed', 'total_tokens', 'ttfb_ms'];

describe('traces end to end', () => {
  let mock: OpenAIMock;
  let gw: TestGateway;
  let acme: string;
  let beta: string;
  let acmeUser: string;

  before(async () => {
    mock = await startOpenAIMock();
    gw = await startGateway({
      realTraces: true,
      env: { [UPSTREAM_KEY_ENV]: OPENAI_MOCK_KEY, SLUICE_PAYLOAD_SECRET: 'x'.repeat(40) },
      config: {
        traces: { batch_age_ms: 50, payload_url: { ttl_seconds: 1 } },
        ...chatAndNativeUpstreams(mock.url),
        organizations: [
          { id: 'acme', models: ['up-model', 'nat-model', 'mock-echo'], store_payloads: true, policy: { dlp: { detectors: ['email'] }, shield: { builtin: false } } },
          { id: 'beta', models: ['mock-echo'] },
        ],
      },
    });
    acme = await gw.key('acme');
    beta = await gw.key('beta');
    acmeUser = await gw.key('acme', 'user');
  });
  after(async () => { await gw.close(); await mock.close(); });

  const chat = (key: string, body: object, headers: Record<string, string> = {}) => fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, ...headers }, body: JSON.stringify({ model: 'up-model', ...body }),
  });
  const api = (key: string, path: string, method = 'GET') => fetch(`${gw.url}${path}`, { method, headers: { authorization: `Bearer ${key}` } });

  /** Polls the API: a trace must be readable within about a second of its response. */
  async function readTrace(id: string, key = acme): Promise<any> {
    const t0 = Date.now();
    for (;;) {
      const res = await api(key, `/v1/traces/${id}`);
      if (res.status === 200) return res.json();
      assert.equal(res.status, 404);
      await res.body?.cancel();
      assert.ok(Date.now() - t0 < 1_500, `trace ${id} not readable within 1.5 s`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  test('JSON: every 2.3 field, agreeing with the gateway block; payload archived after redaction', async () => {
    const res = await chat(acme, { messages: [{ role: 'user', content: 'write to dan@example.com' }] }, { 'gateway-trace': 'true' });
    const body: any = await res.json();
    const g = body.gateway;
    const t = await readTrace(g.request_id);
    for (const f of TRACE_FIELDS) assert.ok(f in t, f);
    assert.equal(t.request_id, g.request_id);
    assert.equal(t.organization_id, 'acme');
    assert.match(t.api_key_id, /^key_/);
    assert.equal(t.provider, g.provider);
    assert.equal(t.model, g.model);
    assert.equal(t.requested_model, 'up-model');
    assert.equal(t.route_reason, g.route_reason);
    assert.equal(t.redactions, 1);
    assert.equal(t.redactions, g.redactions);
    assert.equal(t.cost_usd, g.cost_usd);
    // One clock: the block is read before the reply is written and the trace closes after it, so the
    // trace is never earlier, and later only by the reply's own time (2 ms was too tight for a cold
    // first request on a loaded 2-core CI machine; seconds for milliseconds would be far off either way).
    assert.ok(t.latency_ms >= g.latency_ms && t.latency_ms - g.latency_ms <= 25, `trace ${t.latency_ms} ms, block ${g.latency_ms} ms`);
    assert.equal(t.prompt_tokens, body.usage.prompt_tokens);
    assert.equal(t.completion_tokens, body.usage.completion_tokens);
    assert.equal(t.status_code, 200);
    assert.equal(t.streamed, false);
    assert.equal(t.stream_aborted, false);
    assert.match(t.payload_url, /\/v1\/payloads\//);
    const payload: any = await (await fetch(t.payload_url)).json();
    assert.ok(!JSON.stringify(payload).includes('dan@example.com'), 'what DLP removed is never stored');
    assert.match(JSON.stringify(payload.request), /\[EMAIL_1\]/);
    assert.equal(payload.response.choices[0].message.content, 'write to [EMAIL_1]');
  });

  test('Responses: the payload archive holds the request as sent upstream (after DLP) and the response, both paths, JSON and stream', async () => {
    for (const model of ['up-model', 'nat-model']) {
      for (const stream of [false, true]) {
        const label = `${model} stream=${stream}`;
        const res = await fetch(`${gw.url}/v1/responses`, {
          method: 'POST', headers: { authorization: `Bearer ${acme}` },
          body: JSON.stringify({ model, instructions: 'Operator ed@example.com', input: 'write to dan@example.com', stream }),
        });
        assert.equal(res.status, 200, label);
        const answer = stream ? JSON.parse((await readSse(res)).at(-1)!.split('\ndata: ')[1]!).response : await res.json();
        const t = await readTrace(res.headers.get('x-request-id')!);
        assert.equal(t.endpoint, 'responses', label);
        assert.match(t.payload_url ?? '', /\/v1\/payloads\//, label);
        const payload: any = await (await fetch(t.payload_url)).json();
        const sent = mock.requests.at(-1)!.body;
        assert.ok(!JSON.stringify(payload).includes('@example.com'), `${label}: what DLP removed is never stored`);
        assert.deepEqual(payload.request, sent, `${label}: the request as the upstream received it`);
        if (model === 'up-model') {
          assert.deepEqual(payload.request.messages, [{ role: 'system', content: 'Operator [EMAIL_1]' }, { role: 'user', content: 'write to [EMAIL_2]' }], label);
        } else {
          assert.equal(payload.request.instructions, 'Operator [EMAIL_1]', label);
          assert.equal(payload.request.input, 'write to [EMAIL_2]', label);
        }
        assert.equal(payload.response.id, answer.id, label);
        assert.equal(payload.response.object, 'response', label);
        assert.equal(payload.response.output.at(-1).content[0].text, 'write to [EMAIL_2]', label);
      }
    }
  });

  test('signed links: each read mints a fresh one; tampered and expired links are 403', async () => {
    const res = await chat(acme, { messages: [{ role: 'user', content: 'x' }] });
    const id = res.headers.get('x-request-id')!;
    const a = (await readTrace(id)).payload_url as string;
    // ttl_seconds is 1 and expiries are whole seconds rounded up: a link lives 1 to 2 s.
    await new Promise((r) => setTimeout(r, 2_100));
    const b = (await readTrace(id)).payload_url as string;
    assert.notEqual(a, b);
    assert.equal((await fetch(a)).status, 403, 'expired');
    const tampered = b.replace(/sig=([^&])/, (_m, c) => `sig=${c === 'A' ? 'B' : 'A'}`);
    assert.equal((await fetch(tampered)).status, 403);
    assert.equal((await fetch(b.replace(id, `${id}x`))).status, 403);
    assert.equal((await fetch(b)).status, 200);
  });

  test('a Host header that is not a host does not aim the payload link; no cache keeps what the API answers', async () => {
    const res = await chat(acme, { messages: [{ role: 'user', content: 'x' }] });
    const id = res.headers.get('x-request-id')!;
    await readTrace(id);
    const u = new URL(gw.url);
    const read = (host: string) => new Promise<{ headers: IncomingHttpHeaders; body: any }>((ok, fail) => {
      httpRequest({ host: u.hostname, port: u.port, path: `/v1/traces/${id}`, headers: { host, authorization: `Bearer ${acme}` } }, (r) => {
        let body = '';
        r.setEncoding('utf8');
        r.on('data', (d) => { body += d; });
        r.on('end', () => ok({ headers: r.headers, body: JSON.parse(body) }));
      }).on('error', fail).end();
    });
    const named = await read('gw.example:8443');
    assert.ok(named.body.payload_url.startsWith('http://gw.example:8443/v1/payloads/'), named.body.payload_url);
    assert.ok((await read('[::1]:8443')).body.payload_url.startsWith('http://[::1]:8443/v1/payloads/'));
    // A container's name, as Docker Compose gives it.
    assert.ok((await read('sluice_gateway:8080')).body.payload_url.startsWith('http://sluice_gateway:8080/v1/payloads/'));
    // Whoever sets such a Host would aim a credential-bearing link at a place of their choosing.
    for (const host of ['attacker.example/x?', 'attacker.example@evil', 'a b']) {
      const bad = await read(host);
      assert.ok(bad.body.payload_url.startsWith(`http://127.0.0.1:${gw.app.services.config.server.port}/v1/payloads/`), `${host}: ${bad.body.payload_url}`);
    }
    assert.equal(named.headers['cache-control'], 'no-store');
    assert.equal(named.headers['x-content-type-options'], 'nosniff');
    for (const path of ['/v1/traces', '/v1/api-keys', '/v1/routes', '/v1/usage']) {
      assert.equal((await api(acme, path)).headers.get('cache-control'), 'no-store', path);
    }
  });

  test('HEAD carries status, provider and payload headers', async () => {
    const res = await chat(acme, { messages: [{ role: 'user', content: 'x' }] });
    const id = res.headers.get('x-request-id')!;
    await readTrace(id);
    const head = await api(acme, `/v1/traces/${id}`, 'HEAD');
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('x-gateway-trace-status'), '200');
    assert.equal(head.headers.get('x-gateway-trace-provider'), 'up');
    assert.match(head.headers.get('x-gateway-trace-payload')!, /sig=/);
    assert.equal(await head.text(), '');
    assert.equal((await api(acme, '/v1/traces/req_nope', 'HEAD')).status, 404);
  });

  test('HEAD has no payload header when payload storage is off', async () => {
    const res = await chat(beta, { model: 'mock-echo', messages: [{ role: 'user', content: 'x' }] });
    const id = res.headers.get('x-request-id')!;
    await readTrace(id, beta);
    const head = await api(beta, `/v1/traces/${id}`, 'HEAD');
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('x-gateway-trace-payload'), null);
  });

  test('HEAD has no provider header when the trace has no provider, as GET reads null', async () => {
    const res = await chat(acme, { model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] });
    assert.equal(res.status, 404);
    const id = res.headers.get('x-request-id')!;
    assert.equal((await readTrace(id)).provider, null);
    const head = await api(acme, `/v1/traces/${id}`, 'HEAD');
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('x-gateway-trace-status'), '404');
    assert.equal(head.headers.get('x-gateway-trace-provider'), null);
  });

  test('stream: streamed and ttfb_ms set', async () => {
    const res = await chat(acme, { stream: true, messages: [{ role: 'user', content: 'a b c' }] });
    await res.text();
    const t = await readTrace(res.headers.get('x-request-id')!);
    assert.equal(t.streamed, true);
    assert.ok(typeof t.ttfb_ms === 'number' && t.ttfb_ms >= 0 && t.ttfb_ms <= t.latency_ms + 1);
    assert.ok(t.completion_tokens > 0);
  });

  test('stream: a streamed audio answer is archived with all its sound, not its last piece', async () => {
    const base = { id: 'chatcmpl-up', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'up-model' };
    const pieces = [Buffer.from('RIFF\x01'), Buffer.from('WAVEfmt'), Buffer.from([0, 1, 2, 255])];
    const chunk = (audio: object, finish: string | null = null) => ({ data: { ...base, choices: [{ index: 0, delta: { audio }, finish_reason: finish }] } });
    mock.replay = { sse: [
      chunk({ id: 'audio_1', transcript: 'Hello', data: pieces[0]!.toString('base64') }),
      chunk({ transcript: ' there.', data: pieces[1]!.toString('base64') }),
      chunk({ data: pieces[2]!.toString('base64') }), chunk({ expires_at: 1_700_003_600 }, 'stop'), { data: '[DONE]' },
    ] };
    try {
      const res = await chat(acme, { stream: true, modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'pcm16' }, messages: [{ role: 'user', content: 'say hello' }] });
      let sent = '';
      for (const line of (await readSse(res)).filter((l) => l.startsWith('data: {'))) sent += JSON.parse(line.slice(6)).choices[0]?.delta?.audio?.data ?? '';
      assert.equal(sent, pieces.map((p) => p.toString('base64')).join(''), 'the caller gets every piece as the upstream sent it');
      const t = await readTrace(res.headers.get('x-request-id')!);
      const payload: any = await (await fetch(t.payload_url)).json();
      const audio = payload.response.choices[0].message.audio;
      assert.deepEqual(Buffer.from(audio.data, 'base64'), Buffer.concat(pieces));
      assert.equal(audio.transcript, 'Hello there.');
      assert.equal(audio.expires_at, 1_700_003_600);
    } finally {
      mock.replay = undefined;
    }
  });

  test('errors and aborts: the status the caller saw, stream_aborted for a cut stream', async () => {
    mock.fault = 'error-before-first-byte';
    const failed = await chat(acme, { messages: [{ role: 'user', content: 'x' }] });
    assert.equal(failed.status, 502);
    mock.fault = 'drop-mid-stream';
    const cut = await chat(acme, { stream: true, messages: [{ role: 'user', content: 'a b c d e f' }] });
    await readSse(cut);
    mock.fault = 'none';
    const tf = await readTrace(failed.headers.get('x-request-id')!);
    assert.equal(tf.status_code, 502);
    assert.equal(tf.stream_aborted, false);
    const tc = await readTrace(cut.headers.get('x-request-id')!);
    assert.equal(tc.status_code, 200);
    assert.equal(tc.stream_aborted, true);
    const bad = await chat(acme, { model: 'nope', messages: [{ role: 'user', content: 'x' }] });
    assert.equal((await readTrace(bad.headers.get('x-request-id')!)).status_code, 404);
  });

  test('a stream cut mid-way is archived: the request and the answer so far, marked partial with why', async () => {
    mock.fault = 'drop-mid-stream';
    const cut = await chat(acme, { stream: true, messages: [{ role: 'user', content: 'a b c d e f' }] });
    await readSse(cut);
    mock.fault = 'slow-chunks';
    mock.slowMs = 100;
    // The caller leaves once it has seen some of the answer.
    const left = await chat(acme, { stream: true, messages: [{ role: 'user', content: 'g h i j k l' }] });
    const reader = left.body!.getReader();
    let seen = '';
    while (!seen.includes('"content":"g')) seen += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    await new Promise((r) => setTimeout(r, 300));
    mock.fault = 'none';
    for (const [res, reason, sent] of [[cut, 'upstream_error', 'a b c d e f'], [left, 'client_closed', 'g h i j k l']] as const) {
      const t = await readTrace(res.headers.get('x-request-id')!);
      assert.equal(t.stream_aborted, true, reason);
      assert.match(t.payload_url ?? '', /\/v1\/payloads\//, `${reason}: archived`);
      const payload: any = await (await fetch(t.payload_url)).json();
      assert.equal(payload.request.messages[0].content, sent);
      assert.equal(payload.response.partial, true);
      assert.equal(payload.response.error_code, reason);
      assert.equal(payload.response.id, `chatcmpl_${t.request_id.slice(4)}`);
      const text: string = payload.response.choices[0].message.content;
      assert.ok(text.length > 0 && sent.startsWith(text.trimEnd()), `${reason}: the answer so far, "${text}"`);
    }
  });

  test('a translated Responses stream cut mid-way is archived partial too', async () => {
    mock.fault = 'drop-mid-stream';
    const cut = await fetch(`${gw.url}/v1/responses`, {
      method: 'POST', headers: { authorization: `Bearer ${acme}` }, body: JSON.stringify({ model: 'up-model', stream: true, input: 'm n o p q r' }),
    });
    await cut.text();
    mock.fault = 'none';
    const t = await readTrace(cut.headers.get('x-request-id')!);
    assert.equal(t.stream_aborted, true);
    assert.match(t.payload_url ?? '', /\/v1\/payloads\//, 'archived');
    const payload: any = await (await fetch(t.payload_url)).json();
    assert.equal(payload.request.messages.at(-1).content, 'm n o p q r');
    assert.deepEqual([payload.response.partial, payload.response.error_code], [true, 'upstream_error']);
    assert.ok(payload.response.output_text.startsWith('m n'), payload.response.output_text);
  });

  test('listing: newest first, limit and has_more, cursor, status and provider filters', async () => {
    for (let i = 0; i < 3; i++) await (await chat(beta, { model: 'mock-echo', messages: [{ role: 'user', content: `n${i}` }] })).text();
    const bad = await chat(beta, { model: 'nope', messages: [{ role: 'user', content: 'x' }] });
    await bad.text();
    await new Promise((r) => setTimeout(r, 400));
    const page1: any = await (await api(beta, '/v1/traces?limit=2')).json();
    assert.equal(page1.data.length, 2);
    assert.equal(page1.has_more, true);
    assert.equal(page1.data[0].request_id, bad.headers.get('x-request-id'), 'newest first');
    const page2: any = await (await api(beta, `/v1/traces?limit=2&starting_after=${page1.data[1].request_id}`)).json();
    assert.ok(page2.data.every((t: any) => !page1.data.some((p: any) => p.request_id === t.request_id)));
    const only404: any = await (await api(beta, '/v1/traces?status=404')).json();
    assert.ok(only404.data.length >= 1 && only404.data.every((t: any) => t.status_code === 404));
    const mockOnly: any = await (await api(beta, '/v1/traces?provider=mock')).json();
    assert.ok(mockOnly.data.length >= 3 && mockOnly.data.every((t: any) => t.provider === 'mock'));
    assert.equal((await api(beta, '/v1/traces?limit=500')).status, 400);
  });

  test('tenant isolation and roles: other organisations get 404, user keys 403', async () => {
    const res = await chat(acme, { messages: [{ role: 'user', content: 'private' }] });
    const id = res.headers.get('x-request-id')!;
    await readTrace(id);
    assert.equal((await api(beta, `/v1/traces/${id}`)).status, 404);
    const list: any = await (await api(beta, '/v1/traces?limit=200')).json();
    assert.ok(!list.data.some((t: any) => t.request_id === id));
    const forbidden = await api(acmeUser, '/v1/traces');
    assert.equal(forbidden.status, 403);
    assert.equal(((await forbidden.json()) as any).error.code, 'forbidden');
  });

  test('dry runs are traced and marked; failed authentication is counted, not traced', async () => {
    const dry = await chat(acme, { messages: [{ role: 'user', content: 'x' }] }, { 'gateway-dry-run': 'true' });
    const id = dry.headers.get('x-request-id')!;
    await readTrace(id);
    const { rows } = await gw.app.services.pool.query('SELECT dry_run, cost_usd FROM traces WHERE request_id = $1', [id]);
    assert.equal(rows[0].dry_run, true);
    assert.equal(Number(rows[0].cost_usd), 0);
    const before = (await gw.app.services.pool.query('SELECT count(*)::int AS n FROM traces')).rows[0].n;
    const denied = await chat('sk-sluice-bogus', { messages: [{ role: 'user', content: 'x' }] });
    assert.equal(denied.status, 401);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await gw.app.services.pool.query('SELECT count(*)::int AS n FROM traces')).rows[0].n, before);
    assert.match(await (await fetch(`${gw.url}/metrics`)).text(), /sluice_auth_failures_total [1-9]/);
  });
});

describe('shutdown flushes every trace', () => {
  test('requests made just before close() all have a trace afterwards', async () => {
    const gw = await startGateway({ realTraces: true, config: { traces: { batch_age_ms: 10_000 }, organizations: [{ id: 'acme', models: ['mock-echo'] }] } });
    const key = await gw.key('acme');
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      const r = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: JSON.stringify({ model: 'mock-echo', messages: [{ role: 'user', content: `m${i}` }] }) });
      ids.push(r.headers.get('x-request-id')!);
      await r.text();
    }
    await gw.app.close();
    const c = new pg.Client({ connectionString: gw.db.url });
    await c.connect();
    const { rows } = await c.query('SELECT count(DISTINCT request_id)::int AS n FROM traces WHERE request_id = ANY($1)', [ids]);
    await c.end();
    await gw.db.drop();
    assert.equal(rows[0].n, 40);
  });
});
