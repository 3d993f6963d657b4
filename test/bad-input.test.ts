// Hostile input, one table over every endpoint, on both front ends. Each row
// is a request that once crashed the gateway or answered 500; the property is
// always the same: a JSON 4xx naming the problem, and the gateway still serves.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HTTP_KINDS, startGateway, type TestGateway } from './helpers/gateway.js';
import { stopTestPostgres } from './helpers/pg.js';
import { Agent, request as httpRequest } from 'node:http';
import { rawExchange, rawRequest } from './helpers/raw-http.js';
import { createHttpServer } from '../src/http/create-server.js';
import { startOpenAIMock, OPENAI_MOCK_KEY } from './mocks/openai-mock.js';
import { startAnthropicMock, ANTHROPIC_MOCK_KEY } from './mocks/anthropic-mock.js';
import { startGeminiMock, GEMINI_MOCK_KEY } from './mocks/gemini-mock.js';
import type { MockUpstream } from './mocks/mock-server.js';

after(stopTestPostgres);

interface Case {
  name: string;
  method: string;
  path: string;
  auth?: 'admin' | 'none';
  body?: string;
  status: number;
  code: string;
  param?: string;
}

const CASES: Case[] = [
  // The one-request remote crash: decodeURIComponent threw out of the router.
  { name: 'malformed percent-escape, unauthenticated', method: 'GET', path: '/v1/traces/%E0%A4%A', auth: 'none', status: 400, code: 'invalid_request', param: 'path' },
  { name: 'malformed percent-escape, admin', method: 'GET', path: '/v1/traces/%E0%A4%A', status: 400, code: 'invalid_request' },
  { name: 'truncated escape in a route id', method: 'PATCH', path: '/v1/routes/%', body: '{}', status: 400, code: 'invalid_request' },
  { name: 'escape of invalid UTF-8', method: 'DELETE', path: '/v1/api-keys/%FF%FE', status: 400, code: 'invalid_request' },
  { name: 'HEAD with a malformed escape', method: 'HEAD', path: '/v1/traces/%C0', status: 400, code: '' },
  { name: 'payload link with a malformed escape', method: 'GET', path: '/v1/payloads/%E0%A4%A?expires=1&sig=x', auth: 'none', status: 400, code: 'invalid_request' },
  // Postgres refuses NUL in text: these answered 500.
  { name: 'NUL in a trace id', method: 'GET', path: '/v1/traces/a%00b', status: 404, code: 'not_found' },
  { name: 'NUL in a route id', method: 'GET', path: '/v1/routes/route_%00', status: 404, code: 'not_found' },
  { name: 'control character in a key id', method: 'DELETE', path: '/v1/api-keys/key_%0A', status: 404, code: 'not_found' },
  { name: 'NUL in a trace HEAD', method: 'HEAD', path: '/v1/traces/%00', status: 404, code: '' },
  { name: 'NUL in the traces cursor', method: 'GET', path: '/v1/traces?starting_after=%00', status: 400, code: 'invalid_request', param: 'starting_after' },
  { name: 'NUL in the traces provider filter', method: 'GET', path: '/v1/traces?provider=a%00', status: 400, code: 'invalid_request', param: 'provider' },
  { name: 'NUL in a key name', method: 'POST', path: '/v1/api-keys', body: JSON.stringify({ name: 'a\u0000b' }), status: 400, code: 'invalid_request', param: 'name' },
  {
    name: 'NUL in a route name', method: 'POST', path: '/v1/routes',
    body: JSON.stringify({ name: '\u0000', action_kind: 'auto', match: { requested_model: 'x' } }), status: 400, code: 'invalid_request', param: 'name',
  },
  {
    name: 'NUL in a route match', method: 'POST', path: '/v1/routes',
    body: JSON.stringify({ name: 'n', action_kind: 'auto', match: { requested_model: 'x\u0000' } }), status: 400, code: 'invalid_request', param: 'match.requested_model',
  },
  // Found by test/fuzz.test.ts: a lone surrogate escape parses as JSON but Postgres refuses it in jsonb (500).
  {
    name: 'lone surrogate in a route pin', method: 'POST', path: '/v1/routes',
    body: '{"name":"s","action_kind":"pin","match":{"requested_model":"x"},"action":{"provider":"\\ud800","model":"mock-echo"}}', status: 400, code: 'invalid_request', param: 'action.provider',
  },
  {
    name: 'lone low surrogate in a route match', method: 'POST', path: '/v1/routes',
    body: '{"name":"t","action_kind":"auto","match":{"requested_model":"a\\udc00"}}', status: 400, code: 'invalid_request', param: 'match.requested_model',
  },
  { name: 'lone surrogate in a key name', method: 'POST', path: '/v1/api-keys', body: '{"name":"k\\udbff"}', status: 400, code: 'invalid_request', param: 'name' },
  // Every other endpoint: the same property for its own malformed input.
  { name: 'chat: a body that is not JSON', method: 'POST', path: '/v1/chat/completions', body: '{"model":', status: 400, code: 'invalid_json' },
  { name: 'chat: messages of the wrong type', method: 'POST', path: '/v1/chat/completions', body: '{"model":"mock-echo","messages":"hi"}', status: 400, code: 'invalid_request', param: 'messages' },
  { name: 'chat: deeply nested JSON', method: 'POST', path: '/v1/chat/completions', body: '['.repeat(5000) + ']'.repeat(5000), status: 400, code: 'invalid_request' },
  { name: 'embeddings: pre-tokenised input', method: 'POST', path: '/v1/embeddings', body: '{"model":"mock-embed","input":[1,2,3]}', status: 400, code: 'tokenized_input_unsupported', param: 'input' },
  { name: 'embeddings: an unknown encoding', method: 'POST', path: '/v1/embeddings', body: '{"model":"mock-embed","input":"x","encoding_format":"hex"}', status: 400, code: 'invalid_request', param: 'encoding_format' },
  { name: 'responses: input of the wrong type', method: 'POST', path: '/v1/responses', body: '{"model":"mock-echo","input":42}', status: 400, code: 'invalid_request', param: 'input' },
  { name: 'responses: NUL in previous_response_id', method: 'POST', path: '/v1/responses', body: '{"model":"mock-echo","input":"hi","previous_response_id":"resp_\\u0000"}', status: 404, code: 'not_found', param: 'previous_response_id' },
  { name: 'responses: malformed escape in an id', method: 'GET', path: '/v1/responses/%E0%A4%A', status: 400, code: 'invalid_request', param: 'path' },
  { name: 'responses: NUL in an id', method: 'DELETE', path: '/v1/responses/resp_%00', status: 404, code: 'not_found' },
  { name: 'key limits: malformed escape in a key id', method: 'PATCH', path: '/v1/api-keys/%E0%A4%A', body: '{}', status: 400, code: 'invalid_request', param: 'path' },
  { name: 'key limits: a negative rpm', method: 'POST', path: '/v1/api-keys', body: '{"name":"k","limits":{"rpm":-1}}', status: 400, code: 'invalid_request', param: 'limits.rpm' },
  { name: 'key usage: NUL in a key id', method: 'GET', path: '/v1/api-keys/key_%00/usage', status: 404, code: 'not_found' },
  { name: 'usage: an unknown range', method: 'GET', path: '/v1/usage?range=1y', status: 400, code: 'invalid_request', param: 'range' },
  { name: 'usage: NUL in a filter', method: 'GET', path: '/v1/usage?model=a%00', status: 400, code: 'invalid_request', param: 'model' },
  { name: 'usage: an unknown parameter', method: 'GET', path: '/v1/usage?drop=table', status: 400, code: 'invalid_request', param: 'drop' },
];

for (const http of HTTP_KINDS) {
  describe(`bad input answers a JSON 4xx and the gateway keeps serving: ${http}`, () => {
    let gw: TestGateway;
    let key: string;
    before(async () => {
      gw = await startGateway({ http, config: { organizations: [{ id: 'acme', models: ['mock-echo'] }] } });
      key = await gw.key('acme');
    });
    after(() => gw.close());

    for (const c of CASES) {
      test(c.name, async () => {
        const headers: Record<string, string> = c.auth === 'none' ? {} : { authorization: `Bearer ${key}` };
        if (c.body !== undefined) headers['content-type'] = 'application/json';
        const r = await rawRequest(gw.url, c.method, c.path, headers, c.body);
        assert.equal(r.status, c.status, r.text);
        if (c.method !== 'HEAD') {
          assert.equal(r.body?.error?.code, c.code, r.text);
          if (c.param) assert.equal(r.body.error.param, c.param);
        }
        const ok = await rawRequest(gw.url, 'GET', '/v1/models', { authorization: `Bearer ${key}` });
        assert.equal(ok.status, 200, 'the gateway serves the next request');
      });
    }
  });

  // JSON.parse reads any depth, but JSON.stringify and every walk over a caller's JSON recurse: a value nested
  // some 5,000 levels deep inside a valid request (a few KB) ran them out of stack, a 500, on every provider.
  describe(`JSON nested thousands of levels deep inside a valid request is a 400, never a 500: ${http}`, () => {
    let gw: TestGateway;
    let mocks: MockUpstream[];
    const keys: Record<string, string> = {};
    before(async () => {
      mocks = [await startOpenAIMock(), await startAnthropicMock(), await startGeminiMock()];
      const [oa, an, ge] = mocks;
      gw = await startGateway({
        http,
        env: { DEEP_OA_KEY: OPENAI_MOCK_KEY, DEEP_AN_KEY: ANTHROPIC_MOCK_KEY, DEEP_GE_KEY: GEMINI_MOCK_KEY },
        config: {
          providers: {
            up: { kind: 'openai', base_url: `${oa!.url}/v1`, api_key_env: 'DEEP_OA_KEY' },
            nat: { kind: 'openai', base_url: `${oa!.url}/v1`, api_key_env: 'DEEP_OA_KEY', responses_api: true },
            an: { kind: 'anthropic', base_url: an!.url, api_key_env: 'DEEP_AN_KEY' },
            ge: { kind: 'gemini', base_url: ge!.url, api_key_env: 'DEEP_GE_KEY' },
          },
          models: [
            { id: 'up-model', provider: 'up', context_window: 1e8, pricing: { prompt: 1, completion: 2 } },
            { id: 'nat-model', provider: 'nat', context_window: 1e8, pricing: { prompt: 1, completion: 2 } },
            { id: 'claude-x', provider: 'an', context_window: 1e8, pricing: { prompt: 1, completion: 2 } },
            { id: 'gemini-x', provider: 'ge', context_window: 1e8, pricing: { prompt: 1, completion: 2 } },
            { id: 'up-embed', provider: 'up', type: 'embedding', context_window: 8000, pricing: { prompt: 1, completion: 0 } },
          ],
          organizations: [
            { id: 'dlp', models: ['up-model', 'nat-model', 'claude-x', 'gemini-x', 'up-embed'], policy: { dlp: { detectors: 'all' } } },
            { id: 'plain', models: ['up-model', 'nat-model', 'claude-x', 'gemini-x', 'up-embed'] },
          ],
        },
      });
      for (const org of ['dlp', 'plain']) keys[org] = await gw.key(org);
    });
    after(async () => { await gw.close(); for (const m of mocks) await m.close(); });

    const DEPTH = 6000;
    const deep = '['.repeat(DEPTH) + '"a@b.co"' + ']'.repeat(DEPTH);
    const user = '[{"role":"user","content":"hi"}]';
    const called = `[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":${JSON.stringify(deep)}}}]},{"role":"tool","tool_call_id":"c","content":"r"}]`;
    const chat = (model: string) => [
      `{"model":"${model}","messages":${user},"x_vendor":${deep}}`,
      `{"model":"${model}","messages":[{"role":"user","content":"hi","x_ctx":${deep}}]}`,
      `{"model":"${model}","messages":${called}}`,
    ];
    const requests: Array<[string, string]> = [
      ...['up-model', 'claude-x', 'gemini-x'].flatMap((m) => chat(m).map((b): [string, string] => ['/v1/chat/completions', b])),
      ['/v1/responses', `{"model":"nat-model","input":"hi","metadata":{"a":"b"},"x_vendor":${deep}}`],
      ['/v1/responses', `{"model":"nat-model","input":[{"role":"user","content":"hi","x_ctx":${deep}}]}`],
      ['/v1/responses', `{"model":"claude-x","input":[{"type":"function_call","call_id":"c","name":"f","arguments":${JSON.stringify(deep)}},{"type":"function_call_output","call_id":"c","output":"r"}]}`],
      ['/v1/embeddings', `{"model":"up-embed","input":["a"],"x_vendor":${deep}}`],
    ];

    for (const org of ['dlp', 'plain']) {
      test(`${org}: every path and provider answers 4xx or passes the request on`, async () => {
        for (const [path, body] of requests) {
          const r = await rawRequest(gw.url, 'POST', path, { authorization: `Bearer ${keys[org]}`, 'content-type': 'application/json' }, body);
          // Passed on as written, it may be more than the mock upstream can read: its failure is a 502 upstream_error.
          const passedOn = r.status === 200 || r.body?.error?.code === 'upstream_error';
          assert.ok(passedOn || (r.status >= 400 && r.status < 500), `${path} ${body.slice(0, 60)}: ${r.status} ${r.text.slice(0, 200)}`);
        }
      });
    }

    test('without a policy nothing walks a caller\'s other members: one nested 4,500 deep goes as written, on every path', async () => {
      const d4500 = '['.repeat(4500) + '"x"' + ']'.repeat(4500);
      for (const [path, body] of [
        ['/v1/chat/completions', `{"model":"up-model","messages":${user},"x_vendor":${d4500}}`],
        ['/v1/responses', `{"model":"nat-model","input":[{"role":"user","content":"hi","x_ctx":${d4500}}],"x_vendor":${d4500}}`],
      ]) {
        const r = await rawRequest(gw.url, 'POST', path!, { authorization: `Bearer ${keys.plain}`, 'content-type': 'application/json' }, body);
        assert.equal(r.status, 200, `${path}: ${r.text.slice(0, 200)}`);
      }
    });

    test('DLP over a member nested too deeply to walk: a 400 saying so, and nothing sent', async () => {
      const sent = mocks[0]!.requests.length;
      const r = await rawRequest(gw.url, 'POST', '/v1/chat/completions', { authorization: `Bearer ${keys.dlp}`, 'content-type': 'application/json' }, chat('up-model')[0]);
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body.error.code, 'invalid_request');
      assert.equal(r.body.error.message, 'The JSON is nested too deeply to be processed.');
      assert.equal(mocks[0]!.requests.length, sent);
    });
  });

  // Found by test/fuzz.test.ts: what the HTTP parsers do before sluice's router sees a request.
  describe(`wire-level input is answered by sluice, not by the HTTP library: ${http}`, () => {
    let gw: TestGateway;
    let key: string;
    before(async () => {
      gw = await startGateway({ http, config: { organizations: [{ id: 'acme', models: ['mock-echo'] }] } });
      key = await gw.key('acme');
    });
    after(() => gw.close());

    const statusOf = (text: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
    const bodyOf = (text: string) => text.slice(text.indexOf('\r\n\r\n') + 4);

    test('a raw 0xFF byte in the path: a JSON 4xx (node answered an empty 400)', async () => {
      const r = await rawExchange(gw.url, Buffer.from('GET /v1/traces/\xff HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 'latin1'));
      const status = statusOf(r.text);
      assert.ok(status >= 400 && status < 500, r.text);
      assert.match(r.text, /content-type: application\/json/i);
      assert.equal(typeof JSON.parse(bodyOf(r.text)).error.code, 'string', r.text);
    });

    test('an HTTP/1.1 request without Host is a 400 (node answered it with an empty body; uWS with its own page)', async () => {
      const r = await rawExchange(gw.url, Buffer.from('GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n', 'latin1'));
      assert.equal(statusOf(r.text), 400, r.text);
      if (http === 'node') {
        // No `Connection: close` from the client: the gateway closes all the same (a bare socket.end() left it half-open).
        const open = await rawExchange(gw.url, Buffer.from('GET /healthz HTTP/1.1\r\n\r\n', 'latin1'), 2_000);
        assert.equal(statusOf(open.text), 400, open.text);
        assert.equal(open.closedByServer, true);
      }
      if (http === 'node') assert.equal(JSON.parse(bodyOf(r.text)).error.code, 'invalid_request', r.text);
      // HTTP/1.0 may leave Host out.
      if (http === 'node') assert.equal(statusOf((await rawExchange(gw.url, Buffer.from('GET /healthz HTTP/1.0\r\n\r\n', 'latin1'))).text), 200);
    });

    test('a repeated Gateway-Dry-Run means its first line on both front ends (node read "true, false" as a paid call)', async () => {
      const body = '{"model":"mock-echo","messages":[{"role":"user","content":"hi"}]}';
      const ask = (first: string, second: string) => rawExchange(gw.url, Buffer.from(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n`
        + `Gateway-Dry-Run: ${first}\r\nGateway-Dry-Run: ${second}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`, 'latin1'));
      // The answer's object, whatever the framing (node may send it chunked).
      const objectOf = async (first: string, second: string) => /"object":"([^"]+)"/.exec(bodyOf((await ask(first, second)).text))?.[1];
      assert.equal(await objectOf('true', 'false'), 'route.resolution');
      assert.equal(await objectOf('false', 'true'), 'chat.completion');
    });

    test('a HEAD the parser refuses gets no body (a body would be read as the next response)', async () => {
      const r = await rawExchange(gw.url, Buffer.from('HEAD /v1/\xc3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 'latin1'));
      assert.ok(statusOf(r.text) >= 400 && statusOf(r.text) < 500, r.text);
      assert.equal(bodyOf(r.text), '', r.text);
    });

    test('an unknown Expect is ignored, as on uWS (node answered an empty 417)', async () => {
      const r = await rawRequest(gw.url, 'GET', '/healthz', { expect: 'something-else' });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body, { status: 'ok' });
    });

    test('a HEAD answered with an error keeps the connection good for the next request on a pooling agent', async () => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const u = new URL(gw.url);
      const ask = (method: string, path: string) => new Promise<{ status: number; body: string }>((ok, fail) => {
        const req = httpRequest({ host: u.hostname, port: u.port, method, path, agent, headers: { authorization: `Bearer ${key}` } }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (d) => { body += d; });
          res.on('end', () => ok({ status: res.statusCode!, body }));
        });
        req.setTimeout(5_000, () => req.destroy(new Error('no answer')));
        req.on('error', fail);
        req.end();
      });
      try {
        for (const [method, path, status] of [['HEAD', '/v1/traces/req_nope', 404], ['HEAD', '/v1/models', 200], ['HEAD', '/v1/chat/completions', 405], ['HEAD', '/v1/nope', 404]] as const) {
          const head = await ask(method, path);
          assert.equal(head.status, status, path);
          assert.equal(head.body, '');
          const next = await ask('GET', '/v1/models');
          assert.equal(next.status, 200, `the request after HEAD ${path}`);
          assert.match(next.body, /"object":"list"/);
        }
        // Asked to close, the connection closes at once (it was held open until an idle timeout).
        const started = Date.now();
        const r = await rawExchange(gw.url, Buffer.from(`HEAD /v1/traces/req_nope HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nConnection: close\r\n\r\n`, 'latin1'));
        assert.equal(statusOf(r.text), 404, r.text);
        assert.ok(Date.now() - started < 3_000, `closed after ${Date.now() - started} ms`);
      } finally {
        agent.destroy();
      }
    });

    test('connection: close then keep-alive on a pooling agent: both answered (uWS closed without saying so: socket hang up)', async () => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const u = new URL(gw.url);
      const get = (connection: string) => new Promise<{ status: number; connection: string | undefined }>((ok, fail) => {
        const req = httpRequest({ host: u.hostname, port: u.port, path: '/healthz', agent, headers: { connection } }, (res) => {
          res.resume();
          res.on('end', () => ok({ status: res.statusCode!, connection: res.headers.connection }));
        });
        req.on('error', fail);
        req.end();
      });
      try {
        for (let i = 0; i < 3; i++) {
          const closing = await get('close');
          assert.equal(closing.status, 200);
          assert.equal(closing.connection, 'close', 'the reply announces the close');
          assert.equal((await get('keep-alive')).status, 200);
        }
      } finally {
        agent.destroy();
      }
    });
  });

  describe(`a front-end callback that throws answers 500 for that request only: ${http}`, () => {
    test('the throw is reported, answered, and the server keeps serving', async () => {
      const seen: unknown[] = [];
      const server = createHttpServer(http, (req, res) => {
        if (req.path === '/boom') throw new Error('handler bug');
        res.send(200, [['content-type', 'text/plain']], 'fine');
      }, {
        bodyLimitBytes: 1024,
        onHandlerError(err, res) {
          seen.push(err);
          res.send(500, [['content-type', 'application/json']], '{"error":{"code":"gateway_error"}}');
        },
      });
      const port = await server.listen('127.0.0.1', 0);
      try {
        const base = `http://127.0.0.1:${port}`;
        const boom = await rawRequest(base, 'GET', '/boom');
        assert.equal(boom.status, 500);
        assert.equal(boom.body.error.code, 'gateway_error');
        assert.equal((seen[0] as Error).message, 'handler bug');
        const next = await rawRequest(base, 'GET', '/fine');
        assert.equal(next.status, 200);
        assert.equal(next.text, 'fine');
      } finally {
        await server.close();
      }
    });
  });
}
