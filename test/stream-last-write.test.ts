// Every socket write is a syscall, the largest single cost of a stream: the
// upstream's last batch must leave with the stream's end, in one write, not be
// flushed alone and followed by a second write for [DONE]. TCP may merge or
// split writes on the way, so this is checked where the writes are made: the
// request handler runs on a recording response, behind a real gateway's
// services and a real mock upstream.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import { startMockServer, type MockUpstream } from './mocks/mock-server.js';
import { startGateway, type TestGateway } from './helpers/gateway.js';
import { chatAndNativeUpstreams, UPSTREAM_KEY_ENV } from './helpers/fixtures.js';
import { stopTestPostgres } from './helpers/pg.js';
import { createRequestHandler } from '../src/pipeline/handle-request.js';
import { routes } from '../src/pipeline/routes.js';
import { ClientSignal } from '../src/http/client-signal.js';
import type { GatewayResponse, HeaderList, RequestHandler } from '../src/http/types.js';
import { requestHeaders } from '../src/http/request-headers.js';

after(stopTestPostgres);

type Op = { op: 'begin' | 'write' | 'end' | 'send'; text: string };

/** A response that records each call that would be a socket write. */
class RecordingResponse implements GatewayResponse {
  readonly signal = new ClientSignal();
  readonly aborted = false;
  started = false;
  readonly ops: Op[] = [];
  constructor(private readonly done: () => void) {}
  send(_status: number, _headers: HeaderList, body?: string | Buffer): void { this.started = true; this.ops.push({ op: 'send', text: String(body ?? '') }); }
  beginStream(): void { this.started = true; this.ops.push({ op: 'begin', text: '' }); }
  write(chunk: string): undefined { this.ops.push({ op: 'write', text: chunk }); return undefined; }
  endStream(last = ''): void { this.ops.push({ op: 'end', text: last }); this.done(); }
}

describe('a stream\'s last upstream batch leaves with its end', () => {
  let mock: OpenAIMock;
  let burst: MockUpstream;
  let gw: TestGateway;
  let key: string;
  let handler: RequestHandler;

  before(async () => {
    mock = await startOpenAIMock();
    // A burst: 60 small chunks, usage and [DONE] written in one go, so they reach the gateway in one read.
    burst = await startMockServer((_req, res) => {
      const frame = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;
      const chunk = (choices: unknown[], extra = {}) => frame({ id: 'b-1', object: 'chat.completion.chunk', created: 1, model: 'burst-model', choices, ...extra });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.cork();
      for (let i = 0; i < 60; i++) res.write(chunk([{ index: 0, delta: { content: `t${i} ` }, finish_reason: null }]));
      res.write(chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]));
      res.write(chunk([], { usage: { prompt_tokens: 3, completion_tokens: 60, total_tokens: 63 } }));
      res.end('data: [DONE]\n\n');
      res.uncork();
    });
    const base = chatAndNativeUpstreams(mock.url);
    gw = await startGateway({
      config: {
        providers: { ...base.providers, burst: { kind: 'openai', base_url: `${burst.url}/v1`, api_key_env: UPSTREAM_KEY_ENV } },
        models: [...base.models, { id: 'burst-model', provider: 'burst', context_window: 8_000, pricing: { prompt: 1, completion: 2 } }],
        organizations: [{ id: 'acme', models: ['up-model', 'nat-model', 'burst-model'] }],
      },
      env: { [UPSTREAM_KEY_ENV]: OPENAI_MOCK_KEY },
    });
    key = await gw.key('acme');
    handler = createRequestHandler(gw.app.services, routes, { accepting: () => true, begin() {}, end() {} });
  });
  after(async () => { await gw.close(); await mock.close(); await burst.close(); });

  async function run(path: string, body: unknown): Promise<Op[]> {
    let res!: RecordingResponse;
    await new Promise<void>((done) => {
      res = new RecordingResponse(done);
      handler({
        method: 'POST', path, query: '',
        headers: requestHeaders((name) => (name === 'authorization' ? `Bearer ${key}` : undefined), false),
        body: () => Promise.resolve(Buffer.from(JSON.stringify(body))),
      }, res);
    });
    return res.ops;
  }

  test('chat completions: the end carries the final chunks with [DONE], and nothing is written after the last chunk alone', async () => {
    mock.fault = 'none';
    const ops = await run('/v1/chat/completions', { model: 'up-model', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'last write' }] });
    const end = ops.at(-1)!;
    assert.equal(end.op, 'end');
    assert.ok(end.text.endsWith('data: [DONE]\n\n'));
    // The upstream's last event (its usage chunk) is in the same write as [DONE].
    assert.match(end.text, /"usage":\{"prompt_tokens":\d+/);
    assert.ok(ops.every((o) => o.op !== 'send'), 'a stream, not a JSON reply');
  });

  test('native Responses: the end carries response.completed', async () => {
    const ops = await run('/v1/responses', { model: 'nat-model', stream: true, input: 'last write' });
    const end = ops.at(-1)!;
    assert.equal(end.op, 'end');
    assert.match(end.text, /event: response\.completed\n/);
  });

  test('translated Responses: a burst of chunks in one upstream read leaves with response.completed, in one write', async () => {
    const ops = await run('/v1/responses', { model: 'burst-model', stream: true, input: 'burst' });
    assert.deepEqual(ops.map((o) => o.op), ['begin', 'end']);
    const end = ops[1]!.text;
    assert.equal(end.match(/event: response\.output_text\.delta\n/g)?.length, 60, 'every delta is in it');
    assert.match(end, /event: response\.completed\n/);
  });

  test('a burst of small chunks in one upstream read is one batch: the whole stream leaves in one write', async () => {
    const ops = await run('/v1/chat/completions', { model: 'burst-model', stream: true, messages: [{ role: 'user', content: 'burst' }] });
    assert.deepEqual(ops.map((o) => o.op), ['begin', 'end']);
    const end = ops[1]!.text;
    assert.equal(end.match(/"content":"t\d+ "/g)?.length, 60, 'every chunk is in it');
    assert.ok(end.endsWith('data: [DONE]\n\n'));
  });
});
