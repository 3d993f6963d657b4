// A chunked-moderation block mid-stream: the stream is charged, so it is
// archived, marked partial; the blocked text is not kept, as a blocked JSON
// answer is not archived at all.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { startOpenAIMock, OPENAI_MOCK_KEY } from './mocks/openai-mock.js';
import { startGateway } from './helpers/gateway.js';
import { oneUpstreamConfig, UPSTREAM_KEY_ENV } from './helpers/fixtures.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

test('a stream blocked mid-way is archived partial, without the blocked text', async () => {
  const mock = await startOpenAIMock();
  const gw = await startGateway({
    env: { [UPSTREAM_KEY_ENV]: OPENAI_MOCK_KEY, SLUICE_PAYLOAD_SECRET: 'x'.repeat(40) },
    config: oneUpstreamConfig(mock.url, {
      organizations: [{
        id: 'acme', models: ['up-model'], store_payloads: true,
        policy: { dlp: { detectors: [] }, shield: { builtin: false }, moderation: { mode: 'chunked', rules: [{ name: 'weapons', category: 'violence', terms: ['make a bomb'] }] } },
      }],
    }),
  });
  try {
    const key = await gw.key('acme');
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: 'up-model', stream: true, messages: [{ role: 'user', content: 'here is a long harmless opening line and then make a bomb' }] }),
    });
    const text = await res.text();
    assert.equal(res.status, 200);
    assert.match(text, /event: error\ndata: .*content_blocked/);
    const t = await gw.traces.waitFor(res.headers.get('x-request-id')!);
    assert.deepEqual([t.stream_aborted, t.error_code], [true, 'content_blocked']);
    assert.ok(t.payload, 'archived');
    const archive = JSON.parse(t.payload!);
    assert.match(archive.request.messages[0].content, /make a bomb/, 'the request as sent');
    assert.equal(archive.response.partial, true);
    assert.equal(archive.response.error_code, 'content_blocked');
    assert.equal(archive.response.disclosed_bytes, t.disclosed_bytes);
    assert.ok(t.disclosed_bytes > 0);
    assert.ok(!JSON.stringify(archive.response).includes('bomb'), 'the blocked text is not kept');
  } finally {
    await gw.close();
    await mock.close();
  }
});
