// Secrets never reach the logs: a gateway at LOG_LEVEL=trace serves chats,
// streams, embeddings, management calls, a failing upstream and a 500 (a bug
// whose error object carries the request), and the whole captured log is then
// searched for the bearer key, its hash, a key minted through the API, the
// prompt text and the provider credential. None may appear.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import { createLogger, repeatingWarning } from '../src/logger.js';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import { HTTP_KINDS, startGateway, type TestGateway } from './helpers/gateway.js';
import { oneUpstreamConfig, UPSTREAM_KEY_ENV } from './helpers/fixtures.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

const PROMPT = 'the vault combination is hx-7731-tangerine-kestrel';
const PROVIDER_KEY = `${OPENAI_MOCK_KEY}`;

for (const http of HTTP_KINDS) {
  describe(`logs at trace level hold no key, hash, prompt or credential: ${http}`, () => {
    let mock: OpenAIMock;
    let gw: TestGateway;
    let key: string;
    const lines: string[] = [];

    before(async () => {
      mock = await startOpenAIMock();
      const sink = new Writable({ write(chunk, _enc, done) { lines.push(String(chunk)); done(); } });
      const config = oneUpstreamConfig(mock.url, {
        organizations: [{ id: 'acme', models: ['up-model', 'mock-echo', 'mock-embed'], policy: { dlp: { detectors: ['email'] } } }],
      });
      gw = await startGateway({ http, config, env: { [UPSTREAM_KEY_ENV]: PROVIDER_KEY }, logger: createLogger('trace', sink) });
      key = await gw.key('acme');
    });
    after(async () => { await gw.close(); await mock.close(); });

    const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => fetch(`${gw.url}${path}`, {
      method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body),
    });
    const chat = (model: string, extra: object = {}) => ({ model, messages: [{ role: 'user', content: PROMPT }], ...extra });

    test('every kind of request, then a search of the whole log', async () => {
      const minted: string[] = [];
      assert.equal((await call('POST', '/v1/chat/completions', chat('up-model'))).status, 200);
      assert.equal((await (await call('POST', '/v1/chat/completions', chat('mock-echo', { stream: true }))).text()).includes('[DONE]'), true);
      assert.equal((await call('POST', '/v1/chat/completions', chat('up-model'), { 'gateway-dry-run': 'true', 'gateway-trace': 'true' })).status, 200);
      assert.equal((await call('POST', '/v1/embeddings', { model: 'mock-embed', input: PROMPT })).status, 200);
      const created = await call('POST', '/v1/api-keys', { name: 'ops' });
      assert.equal(created.status, 201);
      minted.push(((await created.json()) as { key: string }).key);
      assert.equal((await call('GET', '/v1/api-keys')).status, 200);
      assert.equal((await call('POST', '/v1/routes', { name: 'r', action_kind: 'auto', match: { requested_model: 'x' } })).status, 201);
      assert.equal((await call('GET', '/v1/traces')).status, 200);
      assert.equal((await call('GET', '/v1/models', undefined, { authorization: `Bearer ${key}x` })).status, 401);
      assert.equal((await call('POST', '/v1/chat/completions', `{"model": "up-model", "messages": "${PROMPT}`)).status, 400);
      // A failing upstream, before and during a stream.
      mock.fault = 'error-before-first-byte';
      assert.equal((await call('POST', '/v1/chat/completions', chat('up-model'))).status, 502);
      mock.fault = 'drop-mid-stream';
      await (await call('POST', '/v1/chat/completions', chat('up-model', { stream: true }))).text();
      mock.fault = 'none';
      // A bug: an error whose properties carry the request, as a careless library might attach it.
      const services = gw.app.services;
      const rules = services.rules;
      services.rules = () => {
        throw Object.assign(new Error('rule lookup failed'), {
          request: { headers: { authorization: `Bearer ${key}` }, body: { messages: [{ content: PROMPT }] } },
          config: { apiKey: PROVIDER_KEY },
        });
      };
      try {
        assert.equal((await call('POST', '/v1/chat/completions', chat('not-a-model'))).status, 500);
      } finally {
        services.rules = rules;
      }
      await new Promise((r) => setTimeout(r, 100));

      const log = lines.join('');
      assert.ok(log.includes('"level":10') || log.includes('"level":20') || log.includes('unhandled error'), 'the log captured something');
      assert.ok(log.includes('unhandled error'), 'the 500 was logged');
      const hash = createHash('sha256').update(key).digest('hex');
      const forbidden: Record<string, string> = {
        'the bearer key': key, 'the bearer key without prefix': key.slice('sk-sluice-'.length),
        'the key hash': hash, 'the key hash (base64)': createHash('sha256').update(key).digest('base64'),
        'a key minted through the API': minted[0]!, 'the prompt': 'tangerine-kestrel', 'the provider credential': PROVIDER_KEY,
      };
      for (const [what, secret] of Object.entries(forbidden)) {
        const at = log.indexOf(secret);
        assert.equal(at, -1, `${what} is in the log: …${log.slice(Math.max(0, at - 200), at + 100)}…`);
      }
    });
  });
}

test('a background task failing on every tick logs once per window, then with the number of repeats', async () => {
  const lines: Array<{ obj: Record<string, unknown>; msg: string }> = [];
  const warn = repeatingWarning({ warn: (obj, msg) => { lines.push({ obj: obj as Record<string, unknown>, msg }); } }, 'poll failed', 200);
  for (let i = 0; i < 5; i++) warn(new Error('connect ECONNREFUSED'));
  assert.equal(lines.length, 1, 'repeats within the window are counted, not logged');
  assert.equal(lines[0]!.obj.repeats, undefined);
  await new Promise((r) => setTimeout(r, 250));
  warn(new Error('connect ECONNREFUSED'));
  assert.equal(lines.length, 2);
  assert.equal(lines[1]!.obj.repeats, 4, 'the next line says how many it stood for');
  assert.equal(lines[1]!.msg, 'poll failed');
});
