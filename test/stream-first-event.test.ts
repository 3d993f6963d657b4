// A stream is answered by its first event, not its 200 head: until that event
// nothing has reached the caller, so a body that ends or breaks before it, or
// whose first event is the provider's own error (Anthropic's overloaded_error,
// an OpenAI-style error chunk), is a failed call, retried and fallen back
// from as an error status would be. A provider's error that is the caller's
// (a 400) comes back as the provider's error, with its type and code. Once
// the first event has come, a failure is the SSE error event, as before.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import { startAnthropicMock, ANTHROPIC_MOCK_KEY } from './mocks/anthropic-mock.js';
import type { MockUpstream, Transcript } from './mocks/mock-server.js';
import { startGateway, HTTP_KINDS, type TestGateway } from './helpers/gateway.js';
import { MGMT_UPSTREAM_ENV, TWO_MODELS, twoProviders } from './helpers/management.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

const ANT_ENV = 'SLUICE_TEST_FIRST_EVENT_ANT_KEY';
const retry = { max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10 };

/** An SSE answer whose first event is `error`, as an OpenAI-compatible server sends one in-band. */
const openaiErrorFirst = (error: Record<string, unknown>): { transcript: Transcript } => ({ transcript: { sse: [{ data: { error } }, { data: '[DONE]' }] } });

for (const http of HTTP_KINDS) {
  describe(`a stream that fails before its first event is a failed call (${http})`, () => {
    let a: OpenAIMock;
    let b: OpenAIMock;
    let ant: MockUpstream;
    let gw: TestGateway;
    let key: string;
    let antKey: string;

    before(async () => {
      a = await startOpenAIMock();
      b = await startOpenAIMock();
      ant = await startAnthropicMock();
      gw = await startGateway({
        http,
        config: {
          providers: {
            ...twoProviders(a, b, retry, retry),
            ant: { kind: 'anthropic', base_url: `${ant.url}/v1`, api_key_env: ANT_ENV, retry: { ...retry, max_attempts: 1 } },
          },
          models: [
            ...TWO_MODELS,
            { id: 'claude-x', provider: 'ant', context_window: 8_000, pricing: { prompt: 1, completion: 1 } },
          ],
          organizations: [
            { id: 'acme', models: ['a-model', 'b-model'], auto_preference: ['a-model'], fallbacks: [{ provider: 'pb', model: 'b-model' }] },
            { id: 'ants', models: ['claude-x', 'b-model'], auto_preference: ['claude-x'], fallbacks: [{ provider: 'pb', model: 'b-model' }] },
          ],
        },
        env: { [MGMT_UPSTREAM_ENV]: OPENAI_MOCK_KEY, [ANT_ENV]: ANTHROPIC_MOCK_KEY },
      });
      key = await gw.key('acme');
      antKey = await gw.key('ants');
    });
    after(async () => { await gw.close(); await a.close(); await b.close(); await ant.close(); });

    const reset = () => { for (const m of [a, b, ant]) { m.requests.length = 0; m.script.length = 0; } };
    const stream = (k = key) => fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${k}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'auto', stream: true, messages: [{ role: 'user', content: 'hello there' }] }),
    });

    test('an error chunk as the first event is retried, then the fallback answers', async () => {
      reset();
      a.script.push(openaiErrorFirst({ message: 'The server had an error.', type: 'server_error', param: null, code: null }));
      a.script.push(openaiErrorFirst({ message: 'The server had an error.', type: 'server_error', param: null, code: null }));
      const res = await stream();
      assert.equal(res.status, 200);
      const text = await res.text();
      assert.ok(text.includes('"model":"b-model"') && text.endsWith('data: [DONE]\n\n') && !text.includes('event: error'), text);
      assert.equal(a.requests.length, 2, 'retried once, as a 500 would be');
      assert.equal(b.requests.length, 1);
      const trace = await gw.traces.waitFor(res.headers.get('x-request-id')!);
      assert.equal(trace.status_code, 200);
      assert.equal(trace.model, 'b-model');
      assert.equal(trace.fallback_from, 'pa/a-model');
      assert.deepEqual(trace.attempts!.map((x) => [x.provider, x.status]), [['pa', 500], ['pa', 500], ['pb', 200]]);
    });

    test('a body that ends, or breaks, after its 200 head and before any event is a failed call too', async () => {
      reset();
      a.script.push({ transcript: { sse: [] } }, 'head-then-drop');
      const res = await stream();
      assert.equal(res.status, 200);
      const text = await res.text();
      assert.ok(text.includes('"model":"b-model"') && text.endsWith('data: [DONE]\n\n'), text);
      assert.equal(a.requests.length, 2);
      const trace = await gw.traces.waitFor(res.headers.get('x-request-id')!);
      assert.deepEqual(trace.attempts!.map((x) => [x.provider, x.status]), [['pa', 502], ['pa', 502], ['pb', 200]]);
    });

    test('a first event that is the caller\'s own error comes back as the provider\'s 400, not retried or fallen back', async () => {
      reset();
      a.script.push(openaiErrorFirst({ message: 'This model\'s maximum context length is 8 tokens.', type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' }));
      const res = await stream();
      assert.equal(res.status, 400);
      assert.match(res.headers.get('content-type') ?? '', /application\/json/);
      const body = await res.json() as { error: Record<string, unknown> };
      assert.equal(body.error.message, 'This model\'s maximum context length is 8 tokens.');
      assert.equal(body.error.type, 'invalid_request_error');
      assert.equal(body.error.param, 'messages');
      assert.equal(body.error.code, 'context_length_exceeded');
      assert.equal(a.requests.length, 1);
      assert.equal(b.requests.length, 0);
    });

    test('a status in the error\'s code is the one it stands for (vLLM writes 429 there): passed through, and retried', async () => {
      reset();
      a.script.push(openaiErrorFirst({ message: 'Too many requests.', type: 'RateLimitError', param: null, code: 429 }));
      a.script.push(openaiErrorFirst({ message: 'Too many requests.', type: 'RateLimitError', param: null, code: 429 }));
      const res = await stream();
      // Two 429s use up pa's attempts; a rate limit is worth the fallback.
      assert.equal(res.status, 200);
      await res.text();
      assert.equal(a.requests.length, 2);
      assert.equal(b.requests.length, 1);
    });

    test('Anthropic\'s overloaded_error as the first event: the openai SDK streams the fallback\'s answer', async () => {
      reset();
      ant.script.push({ transcript: { sse: [{ event: 'error', data: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } }] } });
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: antKey, maxRetries: 0 });
      const s = await client.chat.completions.create({ model: 'auto', stream: true, messages: [{ role: 'user', content: 'hello there' }] });
      let content = '';
      const models = new Set<string>();
      for await (const c of s) { content += c.choices[0]?.delta.content ?? ''; models.add(c.model); }
      assert.ok(content.length > 0, 'the fallback\'s text arrived');
      assert.deepEqual([...models], ['b-model']);
      assert.equal(ant.requests.length, 1);
      assert.equal(b.requests.length, 1);
    });

    test('with nothing to fall back to, the caller gets a JSON 502 that names the overload', async () => {
      reset();
      ant.script.push({ transcript: { sse: [{ event: 'error', data: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } }] } });
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST', headers: { authorization: `Bearer ${antKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'claude-x', stream: true, messages: [{ role: 'user', content: 'hello there' }] }),
      });
      assert.equal(res.status, 502);
      const body = await res.json() as { error: { code: string; message: string } };
      assert.equal(body.error.code, 'upstream_error');
      assert.match(body.error.message, /529: Overloaded/);
      const trace = await gw.traces.waitFor(res.headers.get('x-request-id')!);
      assert.equal(trace.status_code, 502);
      assert.deepEqual(trace.attempts!.map((x) => [x.provider, x.status]), [['ant', 529]]);
    });

    test('only [DONE] is a whole, empty answer; an error after the first event is still the SSE error event', async () => {
      reset();
      a.script.push({ transcript: { sse: [{ data: '[DONE]' }] } });
      const empty = await stream();
      assert.equal(empty.status, 200);
      const emptyText = await empty.text();
      assert.ok(emptyText.endsWith('data: [DONE]\n\n') && !emptyText.includes('event: error'), emptyText);
      assert.equal(b.requests.length, 0);

      // The error in a read of its own: the first event went out on its own read, and is not held for the next.
      a.script.push({ transcript: { pace_ms: 30, sse: [
        { data: { id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'a-model', choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] } },
        { data: { error: { message: 'The server had an error.', type: 'server_error', param: null, code: null } } },
      ] } });
      const late = await stream();
      assert.equal(late.status, 200);
      const lateText = await late.text();
      assert.ok(lateText.includes('event: error') && lateText.includes('The server had an error.'), lateText);
      assert.equal(a.requests.length, 2, 'not retried once an event was relayed');
      assert.equal(b.requests.length, 0);
    });
  });
}
