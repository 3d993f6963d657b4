// Retries before the first byte, against a mock upstream that plays scripted
// failures: each retryable status and a dropped connection are retried, a
// caller's own 400 is not, full-jitter waits stay within their bounds (and reach them), the
// upstream's retry-after(-ms) is honoured, the deadline stops retries, a stream
// is retried only until the upstream accepted it, and a caller who leaves
// cancels a pending retry.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { retrySchema } from '../src/config/resilience-schema.js';
import { GatewayError } from '../src/errors.js';
import { ClientSignal } from '../src/http/client-signal.js';
import { backoffMs, Deadline, isRetryable, retryAfterMs, withRetry } from '../src/upstream/retry.js';
import { InvalidRequestError, UpstreamSocketError } from '../src/upstream/h1/errors.js';
import { upstreamTransportError } from '../src/upstream/upstream-errors.js';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import { sleep } from './mocks/mock-server.js';
import { oneUpstreamConfig, readSse, UPSTREAM_KEY_ENV } from './helpers/fixtures.js';
import { startGateway, type TestGateway } from './helpers/gateway.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

const policy = retrySchema.parse({ max_attempts: 3, base_delay_ms: 40, max_delay_ms: 80, deadline_ms: 3_000 });

describe('retry policy (pure)', () => {
  test('full jitter stays within [0, min(max, base * 2^n)]', () => {
    for (let n = 0; n < 5; n++) {
      const cap = Math.min(policy.max_delay_ms, policy.base_delay_ms * 2 ** n);
      for (let i = 0; i < 200; i++) {
        const d = backoffMs(policy, n);
        assert.ok(d >= 0 && d <= cap, `retry ${n}: ${d} within [0, ${cap}]`);
      }
      assert.equal(backoffMs(policy, n, () => 1), cap);
      assert.equal(backoffMs(policy, n, () => 0), 0);
    }
  });

  test('retry-after-ms wins over retry-after; seconds and HTTP dates both parse', () => {
    const e = (h: Array<[string, string]>) => new GatewayError('upstream_error', 'x', { upstreamStatus: 429, status: 429, headers: h });
    assert.equal(retryAfterMs(e([['retry-after', '2'], ['retry-after-ms', '150']])), 150);
    assert.equal(retryAfterMs(e([['retry-after', '2']])), 2_000);
    const now = Date.now();
    assert.ok(Math.abs(retryAfterMs(e([['retry-after', new Date(now + 3_000).toUTCString()]]), now)! - 3_000) <= 1_000);
    assert.equal(retryAfterMs(e([])), undefined);
  });

  test('what is retryable', () => {
    const status = (s: number) => new GatewayError('upstream_error', 'x', { upstreamStatus: s });
    for (const s of [429, 500, 502, 503, 504]) assert.ok(isRetryable(status(s)), String(s));
    for (const s of [400, 401, 404, 413, 422]) assert.ok(!isRetryable(status(s)), String(s));
    assert.ok(isRetryable(new GatewayError('upstream_timeout')));
    assert.ok(isRetryable(new GatewayError('upstream_error', 'refused', { cause: new Error('connect ECONNREFUSED') })));
    assert.ok(!isRetryable(new GatewayError('upstream_error', 'not JSON', { cause: new SyntaxError('bad') })));
    assert.ok(!isRetryable(upstreamTransportError(new InvalidRequestError('invalid x-bad header'))), 'a head refused before sending is refused again');
    assert.ok(isRetryable(upstreamTransportError(new UpstreamSocketError('other side closed'))));
    assert.ok(!isRetryable(new GatewayError('invalid_request')));
  });

  test('withRetry stops at max_attempts and rethrows the last failure', async () => {
    let calls = 0;
    const err = new GatewayError('upstream_error', 'x', { upstreamStatus: 503 });
    const deadline = new Deadline(policy.deadline_ms, new ClientSignal());
    await assert.rejects(withRetry(policy, deadline, async () => { calls++; throw err; }, { after: () => true }), (e) => e === err);
    deadline.done();
    assert.equal(calls, 3);
  });

  test('a deadline fires once its time has passed (a long one within a tick of it), and never once done', async () => {
    // A long deadline rides the upstream tick, which does not hold the loop by itself: in the gateway the
    // call's socket does. Here this timer stands in for it.
    const socket = setInterval(() => {}, 1_000);
    try {
      for (const ms of [150, 1_000]) {
        const fired = new Deadline(ms, new ClientSignal());
        const t0 = performance.now();
        await new Promise<void>((ok) => fired.once('abort', ok));
        const took = performance.now() - t0;
        assert.ok(fired.expired && took >= ms - 2 && took < ms + 250, `${ms} ms deadline fired after ${Math.round(took)} ms`);
        fired.done();
        const stopped = new Deadline(ms, new ClientSignal());
        stopped.done();
        await sleep(ms + 250);
        assert.ok(!stopped.aborted && !stopped.expired, `a ${ms} ms deadline fired after done()`);
      }
    } finally {
      clearInterval(socket);
    }
  });
});

describe('retries through the gateway', () => {
  let mock: OpenAIMock;
  let gw: TestGateway;
  let key: string;

  before(async () => {
    mock = await startOpenAIMock();
    const base = oneUpstreamConfig(mock.url);
    gw = await startGateway({
      config: { ...base, providers: { up: { ...base.providers!.up!, retry: policy } } },
      env: { [UPSTREAM_KEY_ENV]: OPENAI_MOCK_KEY },
    });
    key = await gw.key();
  });
  after(async () => { await gw.close(); await mock.close(); });

  const post = (body: object, signal?: AbortSignal) => fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body), ...(signal ? { signal } : {}),
  });
  const chat = (stream = false) => ({ model: 'up-model', stream, messages: [{ role: 'user', content: 'retry me' }] });
  const fresh = () => { mock.requests.length = 0; mock.script.length = 0; };

  for (const status of [429, 500, 502, 503, 504]) {
    test(`a ${status} before the first byte is retried, and the trace lists both attempts`, async () => {
      fresh();
      mock.script.push(status);
      const res = await post(chat());
      assert.equal(res.status, 200, await res.clone().text());
      assert.equal(mock.requests.length, 2);
      const trace = await gw.traces.waitFor(res.headers.get('x-request-id')!);
      assert.deepEqual(trace.attempts!.map((a) => a.status), [status, 200]);
      assert.equal(trace.fallback_from, null);
    });
  }

  // A body of some 45 KB (more than one TCP segment), in characters of two to four UTF-8 bytes:
  // every attempt sends all of it, and says its length in bytes.
  for (const stream of [false, true]) {
    test(`a large ${stream ? 'stream' : 'JSON'} request reaches the upstream whole on every attempt, with its content-length`, async () => {
      fresh();
      mock.script.push('drop', 503);
      // Characters of two, three and four UTF-8 bytes: the length sent must count bytes, not characters.
      const content = 'é€🙂 a large prompt '.repeat(1_600);
      const res = await post({ ...chat(stream), messages: [{ role: 'user', content }] });
      assert.equal(res.status, 200, await res.clone().text());
      if (stream) assert.equal((await readSse(res)).at(-1), 'data: [DONE]');
      assert.equal(mock.requests.length, 3);
      for (const r of mock.requests) {
        assert.equal(r.body.messages[0].content, content);
        assert.equal(r.text, mock.requests[0]!.text, 'each attempt sends the same bytes');
        assert.equal(r.headers['content-length'], String(Buffer.byteLength(r.text)));
        assert.equal(r.headers['transfer-encoding'], undefined, 'not chunked');
      }
    });
  }

  test('a dropped connection is retried', async () => {
    fresh();
    mock.script.push('drop');
    const res = await post(chat());
    assert.equal(res.status, 200);
    assert.equal(mock.requests.length, 2);
  });

  test('the caller\'s own 400 is not retried', async () => {
    fresh();
    mock.script.push(400);
    const res = await post(chat());
    assert.equal(res.status, 400);
    assert.equal(mock.requests.length, 1);
  });

  test('attempts stop at max_attempts; the waits stay within the jitter bounds', async () => {
    fresh();
    mock.script.push(500, 500, 500);
    const res = await post(chat());
    assert.equal(res.status, 502);
    assert.equal(mock.requests.length, 3);
    const [a, b, c] = mock.requests.map((r) => r.at);
    // Wait n is at most min(80, 40 * 2^n) ms; a few ms of slack for the round trips on a busy machine.
    assert.ok(b! - a! <= 40 + 60, `first wait ${b! - a!} ms`);
    assert.ok(c! - b! <= 80 + 60, `second wait ${c! - b!} ms`);
    const trace = await gw.traces.waitFor(res.headers.get('x-request-id')!);
    assert.deepEqual(trace.attempts!.map((x) => x.status), [500, 500, 500]);
  });

  test('the backoff really waits: with the jitter at its top, each wait is its full cap', async () => {
    fresh();
    // Injected at the top of its range, full jitter waits exactly min(max, base * 2^n): 40 ms, then 80.
    gw.app.services.deps.random = () => 1;
    try {
      mock.script.push(500, 500);
      assert.equal((await post(chat())).status, 200);
    } finally { delete gw.app.services.deps.random; }
    const [a, b, c] = mock.requests.map((r) => r.at);
    // Timers fire at most a millisecond early; everything else (the round trips) only adds.
    assert.ok(b! - a! >= 40 - 1, `first wait ${b! - a!} ms`);
    assert.ok(c! - b! >= 80 - 1, `second wait ${c! - b!} ms`);
  });

  test('retry-after-ms and retry-after from the upstream are honoured', async () => {
    fresh();
    mock.script.push({ status: 429, headers: { 'retry-after-ms': '300' } });
    assert.equal((await post(chat())).status, 200);
    assert.ok(mock.requests[1]!.at - mock.requests[0]!.at >= 295, `waited ${mock.requests[1]!.at - mock.requests[0]!.at} ms`);
    fresh();
    mock.script.push({ status: 503, headers: { 'retry-after': '1' } });
    assert.equal((await post(chat())).status, 200);
    assert.ok(mock.requests[1]!.at - mock.requests[0]!.at >= 995, `waited ${mock.requests[1]!.at - mock.requests[0]!.at} ms`);
  });

  test('a wait past the deadline is not started: the failure comes back at once', async () => {
    fresh();
    mock.script.push({ status: 429, headers: { 'retry-after': '10' } });
    const t0 = performance.now();
    const res = await post(chat());
    assert.equal(res.status, 429, 'the upstream\'s 429 passes through');
    assert.equal(res.headers.get('retry-after'), '10', 'with its retry-after, for the caller\'s SDK');
    assert.ok(performance.now() - t0 < 1_000);
    assert.equal(mock.requests.length, 1);
  });

  test('a stream is retried until the upstream accepts it', async () => {
    fresh();
    mock.script.push(503);
    const res = await post(chat(true));
    assert.equal(res.status, 200);
    const events = await readSse(res);
    assert.equal(events.at(-1), 'data: [DONE]');
    assert.equal(mock.requests.length, 2);
  });

  test('a stream that fails after its first byte is never retried', async () => {
    fresh();
    mock.fault = 'drop-mid-stream';
    try {
      const res = await post({ ...chat(true), messages: [{ role: 'user', content: 'a b c d e f' }] });
      assert.equal(res.status, 200);
      const events = await readSse(res);
      assert.match(events.at(-1)!, /^event: error/);
      await sleep(300);
      assert.equal(mock.requests.length, 1);
    } finally { mock.fault = 'none'; }
  });

  test('a caller who leaves cancels the pending retry', async () => {
    fresh();
    mock.script.push({ status: 503, headers: { 'retry-after-ms': '800' } });
    const ac = new AbortController();
    const pending = post(chat(), ac.signal).catch((e: Error) => e);
    await sleep(200);
    ac.abort();
    assert.ok((await pending) instanceof Error);
    await sleep(1_000);
    assert.equal(mock.requests.length, 1, 'no retry after the caller left');
  });
});
