// Every socket write is a syscall, the largest single cost of a stream: the
// upstream's last batch must leave with the stream's end, in one write, not be
// flushed alone and followed by a second write for [DONE]. TCP may merge or
// split writes on the way, so this is checked where the writes are made: the
// request handler runs on a recording response, behind a real gateway's
// services and a real mock upstream.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import { startGateway, type TestGateway } from './helpers/gateway.js';
import { chatAndNativeUpstreams, UPSTREAM_KEY_ENV } from './helpers/fixtures.js';
import { stopTestPostgres } from './helpers/pg.js';
import { createRequestHandler } from '../src/pipeline/handle-request.js';
import { routes } from '../src/pipeline/routes.js';
import { ClientSignal } from '../src/http/client-signal.js';
import type { GatewayResponse, HeaderList, RequestHandler } from '../src/http/types.js';

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
  let gw: TestGateway;
  let key: string;
  let handler: RequestHandler;

  before(async () => {
    mock = await startOpenAIMock();
    gw = await startGateway({
      config: { ...chatAndNativeUpstreams(mock.url), organizations: [{ id: 'acme', models: ['up-model', 'nat-model'] }] },
      env: { [UPSTREAM_KEY_ENV]: OPENAI_MOCK_KEY },
    });
    key = await gw.key('acme');
    handler = createRequestHandler(gw.app.services, routes, { accepting: () => true, begin() {}, end() {} });
  });
  after(async () => { await gw.close(); await mock.close(); });

  async function run(path: string, body: unknown): Promise<Op[]> {
    let res!: RecordingResponse;
    await new Promise<void>((done) => {
      res = new RecordingResponse(done);
      handler({
        method: 'POST', path, query: '',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
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
});
