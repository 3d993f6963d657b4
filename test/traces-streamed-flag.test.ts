// Spec 2.3: `streamed` is true when the answer was delivered as a server-sent
// event stream, and `ttfb_ms` is kept for those only. A request that asked for
// a stream and was answered with a JSON error was not one.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import { startGateway, type TestGateway } from './helpers/gateway.js';
import { oneUpstreamConfig, UPSTREAM_KEY_ENV } from './helpers/fixtures.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

describe('the trace says streamed only when an SSE stream went out', () => {
  let mock: OpenAIMock;
  let gw: TestGateway;
  let key: string;

  before(async () => {
    mock = await startOpenAIMock();
    gw = await startGateway({ env: { [UPSTREAM_KEY_ENV]: OPENAI_MOCK_KEY }, config: oneUpstreamConfig(mock.url) });
    key = await gw.key('acme');
  });
  after(async () => { await gw.close(); await mock.close(); });

  async function traced(path: string, body: object): Promise<{ status: number; type: string; trace: Awaited<ReturnType<TestGateway['traces']['waitFor']>> }> {
    const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: JSON.stringify({ stream: true, ...body }) });
    await res.arrayBuffer();
    return { status: res.status, type: res.headers.get('content-type') ?? '', trace: await gw.traces.waitFor(res.headers.get('x-request-id')!) };
  }
  const chat = (model: string) => traced('/v1/chat/completions', { model, messages: [{ role: 'user', content: 'one two three' }] });
  const responses = (model: string) => traced('/v1/responses', { model, input: 'one two three' });

  for (const [name, call] of [['chat', chat], ['responses', responses]] as const) {
    test(`${name}: an unknown model is a JSON 404, not streamed, no TTFB`, async () => {
      const r = await call('no-such-model');
      assert.equal(r.status, 404);
      assert.match(r.type, /^application\/json/);
      assert.deepEqual([r.trace.streamed, r.trace.ttfb_ms], [false, null]);
    });

    test(`${name}: an upstream 500 before the first byte is a JSON 502, not streamed`, async () => {
      mock.fault = 'error-before-first-byte';
      try {
        const r = await call('up-model');
        assert.equal(r.status, 502);
        assert.match(r.type, /^application\/json/);
        assert.deepEqual([r.trace.streamed, r.trace.ttfb_ms], [false, null]);
      } finally {
        mock.fault = 'none';
      }
    });

    test(`${name}: a stream is streamed, with its TTFB, and so is one cut mid-way`, async () => {
      const ok = await call('up-model');
      assert.match(ok.type, /^text\/event-stream/);
      assert.equal(ok.trace.streamed, true);
      assert.ok(typeof ok.trace.ttfb_ms === 'number' && ok.trace.ttfb_ms >= 0);
      mock.fault = 'drop-mid-stream';
      try {
        const cut = await call('up-model');
        assert.match(cut.type, /^text\/event-stream/);
        assert.deepEqual([cut.trace.streamed, cut.trace.stream_aborted], [true, true]);
      } finally {
        mock.fault = 'none';
      }
    });
  }
});
