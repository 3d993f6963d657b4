// The edges of a stream answered by its first event: the request's deadline
// stops at the 200 head, so a model that thinks for long before its first
// token still streams; an in-band overloaded_error (529) is retried as an HTTP
// one is; a caller gone before the first event is a 499 with one upstream call;
// a first event over upstream.max_event_bytes is a 502; an in-band 429 keeps
// the head's rate-limit headers; and an error after an opening that says
// nothing (a role chunk, Anthropic's message_start) in the same read is still
// a failed call.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startAnthropicMock, ANTHROPIC_MOCK_KEY } from './mocks/anthropic-mock.js';
import type { MockUpstream } from './mocks/mock-server.js';
import { startGateway, type TestGateway } from './helpers/gateway.js';
import { MGMT_UPSTREAM_ENV } from './helpers/management.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A raw OpenAI-compatible upstream whose behaviour each test sets. */
let behave: (res: ServerResponse) => Promise<void> = async () => {};
let hits = 0;
let closedEarly = 0;
const chunkOf = (content: string, finish: string | null = null) => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: finish }] })}\n\n`;

describe('a stream answered by its first event: the edges', () => {
  let up: Server;
  let upUrl = '';
  let ant: MockUpstream;
  let gw: TestGateway;
  let key: string;
  let antKey: string;
  before(async () => {
    up = createServer((req, res) => {
      hits++;
      res.on('close', () => { if (!res.writableFinished) closedEarly++; });
      req.resume();
      req.on('end', () => { void behave(res).catch(() => res.destroy()); });
    });
    await new Promise<void>((ok) => up.listen(0, '127.0.0.1', ok));
    upUrl = `http://127.0.0.1:${(up.address() as AddressInfo).port}`;
    ant = await startAnthropicMock();
    gw = await startGateway({
      http: 'node',
      config: {
        upstream: { max_event_bytes: 4096 },
        providers: {
          slow: { kind: 'openai', base_url: `${upUrl}/v1`, api_key_env: MGMT_UPSTREAM_ENV, retry: { max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10, deadline_ms: 1500 } },
          ant: { kind: 'anthropic', base_url: `${ant.url}/v1`, api_key_env: 'SLUICE_TEST_EDGES_ANT_KEY', retry: { max_attempts: 3, base_delay_ms: 5, max_delay_ms: 10 } },
        },
        models: [
          { id: 'slow-model', provider: 'slow', context_window: 8_000, pricing: { prompt: 1, completion: 1 } },
          { id: 'claude-x', provider: 'ant', context_window: 8_000, pricing: { prompt: 1, completion: 1 } },
        ],
        organizations: [{ id: 'acme', models: ['slow-model'] }, { id: 'ants', models: ['claude-x'] }],
      },
      env: { [MGMT_UPSTREAM_ENV]: 'sk-x', SLUICE_TEST_EDGES_ANT_KEY: ANTHROPIC_MOCK_KEY },
    });
    key = await gw.key('acme');
    antKey = await gw.key('ants');
  });
  after(async () => { await gw.close(); up.closeAllConnections(); up.close(); await ant.close(); });

  const stream = (k: string, model: string, signal?: AbortSignal) => fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', signal, headers: { authorization: `Bearer ${k}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'think hard' }] }),
  });

  // OpenRouter sends `: PROCESSING` comments while a model thinks: the deadline ended with the head.
  test('a first event after deadline_ms (head and keep-alive comments at once) still streams', async () => {
    hits = 0;
    behave = async (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      for (let i = 0; i < 10; i++) { res.write(': PROCESSING\n\n'); await sleep(200); }
      res.write(chunkOf('Done thinking.') + chunkOf('', 'stop') + 'data: [DONE]\n\n');
      res.end();
    };
    const res = await stream(key, 'slow-model');
    const text = await res.text();
    const trace = await gw.traces.waitFor(res.headers.get('x-request-id')!);
    assert.equal(res.status, 200, `${text} attempts=${JSON.stringify(trace.attempts)} hits=${hits}`);
  });

  // 529 is Anthropic's overloaded_error, retried as its SDK retries it.
  test('Anthropic overloaded_error as the first event is retried (max_attempts 3)', async () => {
    ant.requests.length = 0;
    const err = { transcript: { sse: [{ event: 'error', data: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } }] } };
    ant.script.push(err, err);
    const res = await stream(antKey, 'claude-x');
    const text = await res.text();
    assert.equal(ant.requests.length, 3, `attempts made: ${ant.requests.length}; status ${res.status} ${text.slice(0, 200)}`);
    assert.equal(res.status, 200);
  });

  // A caller that leaves before the first event: 499, the upstream call aborted, no retry.
  test('client gone before the first event: 499, one upstream call, aborted', async () => {
    hits = 0; closedEarly = 0;
    behave = async (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      for (let i = 0; i < 6 && !res.destroyed; i++) { res.write(': ping\n\n'); await sleep(100); }
      if (!res.destroyed) res.end(chunkOf('late', 'stop') + 'data: [DONE]\n\n');
    };
    const ac = new AbortController();
    const p = stream(key, 'slow-model', ac.signal).catch(() => undefined);
    await sleep(250);
    ac.abort();
    await p;
    await sleep(400);
    const trace = gw.traces.rows.at(-1)!;
    assert.equal(trace.status_code, 499, JSON.stringify(trace));
    assert.equal(hits, 1);
    assert.equal(closedEarly, 1);
  });

  // An event past max_event_bytes as the first is a 502 JSON error; it is not retried.
  test('first event over max_event_bytes: 502 JSON', async () => {
    hits = 0;
    behave = async (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const whole = chunkOf('x'.repeat(10_000), 'stop');
      res.write(whole.slice(0, 6000));
      await sleep(50);
      res.end(whole.slice(6000) + 'data: [DONE]\n\n');
    };
    const res = await stream(key, 'slow-model');
    const body = await res.text();
    assert.equal(res.status, 502, body.slice(0, 300));
    assert.match(body, /max_event_bytes/);
    assert.equal(hits, 1);
  });

  // An in-band 429 passed through carries the 200 head's rate-limit headers, as an HTTP 429 would.
  test('in-band 429 first event keeps the head\'s x-ratelimit headers', async () => {
    behave = async (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '20s' });
      res.end(`data: ${JSON.stringify({ error: { message: 'Rate limit reached', type: 'requests', param: null, code: 'rate_limit_exceeded' } })}\n\n`);
    };
    const res = await stream(key, 'slow-model');
    await res.text();
    assert.equal(res.status, 429);
    assert.equal(res.headers.get('x-ratelimit-remaining-requests'), '0');
  });

  // An error after an opening that says nothing, in the same read: nothing reached the caller yet.
  test('role chunk then an in-band 500 in one read is retried like an error-first stream', async () => {
    hits = 0;
    let n = 0;
    behave = async (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (n++ === 0) {
        res.end(`data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] })}\n\n`
          + `data: ${JSON.stringify({ error: { message: 'The server had an error.', type: 'server_error', param: null, code: null } })}\n\n`);
      } else res.end(chunkOf('fine', 'stop') + 'data: [DONE]\n\n');
    };
    const res = await stream(key, 'slow-model');
    const text = await res.text();
    assert.ok(!text.includes('event: error'), text.slice(0, 300));
    assert.equal(hits, 2);
  });
  test('Anthropic message_start then overloaded_error in one read is retried', async () => {
    ant.requests.length = 0;
    (ant.script as any).push({ transcript: { sse: [
      { event: 'message_start', data: { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', content: [], model: 'claude-x', stop_reason: null, stop_sequence: null, usage: { input_tokens: 5, output_tokens: 1 } } } },
      { event: 'error', data: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } }] } });
    const res = await stream(antKey, 'claude-x');
    const text = await res.text();
    assert.equal(res.status, 200, text.slice(0, 300));
    assert.ok(!text.includes('event: error') && text.endsWith('data: [DONE]\n\n'), text.slice(0, 300));
    assert.equal(ant.requests.length, 2, 'retried');
  });
});
