// Policy and storage on /v1/responses: DLP over instructions and every input
// item (tool outputs and call arguments included), moderation blocking a
// streamed response, the organisation switch, the size cap and retention.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import type { Transcript } from './mocks/mock-server.js';
import { startGateway, type TestGateway } from './helpers/gateway.js';
import { readSse, UPSTREAM_KEY_ENV } from './helpers/fixtures.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

const base = { id: 'chatcmpl-up', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'up-model' };
const stream = (pieces: string[]): Transcript => ({
  sse: [
    ...pieces.map((content, i) => ({ data: { ...base, choices: [{ index: 0, delta: i === 0 ? { role: 'assistant', content } : { content }, finish_reason: null }] } })),
    { data: { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] } },
    { data: { ...base, choices: [], usage: { prompt_tokens: 3, completion_tokens: 9, total_tokens: 12 } } },
    { data: '[DONE]' },
  ],
});
const moderation = (mode: 'buffered' | 'chunked') => ({ mode, rules: [{ name: 'weapons', category: 'violence', terms: ['make a bomb'] }] });

describe('responses API: policy and storage', () => {
  let mock: OpenAIMock;
  let gw: TestGateway;
  const keys: Record<string, string> = {};

  before(async () => {
    mock = await startOpenAIMock();
    gw = await startGateway({
      env: { [UPSTREAM_KEY_ENV]: OPENAI_MOCK_KEY },
      config: {
        providers: { up: { kind: 'openai', base_url: `${mock.url}/v1`, api_key_env: UPSTREAM_KEY_ENV } },
        models: [{ id: 'up-model', provider: 'up', context_window: 8_000, pricing: { prompt: 1, completion: 2 } }],
        responses: { max_stored_bytes: 4096 },
        organizations: [
          { id: 'dlp', models: ['up-model'], policy: { dlp: { detectors: 'all' }, shield: { builtin: false }, moderation: moderation('buffered') } },
          { id: 'chunked', models: ['up-model'], policy: { dlp: { detectors: [] }, shield: { builtin: false }, moderation: moderation('chunked') } },
          { id: 'nostore', models: ['up-model'], responses: { store: false } },
        ],
      },
    });
    for (const org of ['dlp', 'chunked', 'nostore']) keys[org] = await gw.key(org);
  });
  after(async () => { await gw.close(); await mock.close(); });

  const post = (org: string, body: object) => fetch(`${gw.url}/v1/responses`, {
    method: 'POST', headers: { authorization: `Bearer ${keys[org]}` }, body: JSON.stringify({ model: 'up-model', ...body }),
  });
  const stored = async (id: string) => (await gw.app.services.pool.query('SELECT input FROM responses WHERE id = $1', [id])).rows[0];
  const settle = () => new Promise((ok) => setTimeout(ok, 150));

  test('DLP redacts instructions, input text, function-call arguments and tool outputs; the stored input is the redacted one', async () => {
    mock.replay = undefined;
    const res = await post('dlp', {
      instructions: 'Operator is bob@example.com',
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'mail alice@example.com' }] },
        { type: 'function_call', call_id: 'call_1', name: 'send', arguments: '{"to":"alice@example.com"}' },
        { type: 'function_call_output', call_id: 'call_1', output: 'sent to alice@example.com, card 4111 1111 1111 1111' },
        { role: 'user', content: 'done?' },
      ],
    });
    assert.equal(res.status, 200, await res.clone().text());
    const body: any = await res.json();
    const wire = JSON.stringify(mock.requests.at(-1)!.body.messages);
    for (const secret of ['alice@example.com', 'bob@example.com', '4111 1111 1111 1111']) assert.ok(!wire.includes(secret), secret);
    const msgs = mock.requests.at(-1)!.body.messages;
    assert.equal(msgs[0].role, 'system');
    assert.match(msgs[0].content, /\[EMAIL_\d\]/);
    assert.equal(JSON.parse(msgs[2].tool_calls[0].function.arguments).to.startsWith('[EMAIL_'), true);
    assert.equal(msgs[3].role, 'tool');
    const trace = await gw.traces.waitFor(res.headers.get('x-request-id')!);
    assert.ok(trace.redactions >= 4, String(trace.redactions));
    await settle();
    const row = await stored(body.id);
    assert.ok(row, 'stored');
    assert.ok(!JSON.stringify(row.input).includes('alice@example.com'));
  });

  test('buffered moderation blocks before the first byte, JSON and stream', async () => {
    mock.replay = stream(['here is how to ', 'make a bomb']);
    const res = await post('dlp', { input: 'x', stream: true });
    assert.equal(res.status, 422);
    assert.equal(((await res.json()) as any).error.code, 'content_blocked');
  });

  test('chunked moderation cuts a streamed response: response.failed then error, and the trace says so', async () => {
    mock.replay = stream(['Sure. '.repeat(40), 'Here is how to ', 'make a bomb', ' now.']);
    const res = await post('chunked', { input: 'x', stream: true });
    assert.equal(res.status, 200);
    const events = await readSse(res);
    const types = events.map((e) => /^event: (\S+)/.exec(e)![1]);
    assert.deepEqual(types.slice(-2), ['response.failed', 'error']);
    assert.ok(types.includes('response.output_text.delta'), 'clean text went out first');
    assert.ok(!events.join('').includes('make a bomb'));
    const failed = JSON.parse(events.at(-2)!.split('\ndata: ')[1]!);
    assert.equal(failed.response.status, 'failed');
    assert.equal(failed.response.error.code, 'content_blocked');
    const err = JSON.parse(events.at(-1)!.split('\ndata: ')[1]!);
    assert.equal(err.code, 'content_blocked');
    const trace = await gw.traces.waitFor(res.headers.get('x-request-id')!);
    assert.equal(trace.stream_aborted, true);
    assert.ok(trace.disclosed_bytes > 0);
    await settle();
    const id = JSON.parse(events[0]!.split('\ndata: ')[1]!).response.id;
    assert.equal(await stored(id), undefined, 'a failed response is not stored');
  });

  test('an organisation with responses.store false stores nothing; store:false per request neither', async () => {
    mock.replay = undefined;
    const a: any = await (await post('nostore', { input: 'keep?' })).json();
    assert.equal(a.store, false);
    const b: any = await (await post('dlp', { input: 'keep?', store: false })).json();
    await settle();
    assert.equal(await stored(a.id), undefined);
    assert.equal(await stored(b.id), undefined);
  });

  test('over max_stored_bytes the response is not stored; an expired one is gone and swept', async () => {
    mock.replay = undefined;
    const big: any = await (await post('dlp', { input: 'y '.repeat(3000) })).json();
    const small: any = await (await post('dlp', { input: 'small' })).json();
    await settle();
    assert.equal(await stored(big.id), undefined);
    assert.ok(await stored(small.id));
    await gw.app.services.pool.query(`UPDATE responses SET expires_at = now() - interval '1 second' WHERE id = $1`, [small.id]);
    const get = await fetch(`${gw.url}/v1/responses/${small.id}`, { headers: { authorization: `Bearer ${keys.dlp}` } });
    assert.equal(get.status, 404);
    const chained = await post('dlp', { input: 'more', previous_response_id: small.id });
    assert.equal(chained.status, 404);
    assert.ok((await gw.app.services.responses.sweep()) >= 1);
    assert.equal(await stored(small.id), undefined);
  });
});
