// Chat completions end to end: the official openai SDK as the client, the
// gateway on each front end, a mock OpenAI-compatible server as the upstream.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import { HTTP_KINDS, startGateway, type TestGateway } from './helpers/gateway.js';
import { oneUpstreamConfig, readSse, REQUEST_ID, UPSTREAM_KEY_ENV } from './helpers/fixtures.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

for (const http of HTTP_KINDS) {
  describe(`chat completions over ${http}`, () => {
    let mock: OpenAIMock;
    let gw: TestGateway;
    let client: OpenAI;
    let key: string;

    before(async () => {
      mock = await startOpenAIMock();
      gw = await startGateway({ http, config: oneUpstreamConfig(mock.url), env: { [UPSTREAM_KEY_ENV]: OPENAI_MOCK_KEY } });
      assert.equal(gw.app.httpKind, http);
      key = await gw.key('acme');
      client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
    });
    after(async () => { await gw.close(); await mock.close(); });

    const post = (body: unknown, headers: Record<string, string> = {}) => fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body),
    });

    test('non-stream: the SDK gets the upstream answer in the contract shape, with a request id', async () => {
      mock.fault = 'none';
      const { data, response } = await client.chat.completions.create({ model: 'up-model', messages: [{ role: 'user', content: 'hello sluice' }] }).withResponse();
      assert.match(data.id, /^chatcmpl_/);
      assert.equal(data.object, 'chat.completion');
      assert.equal(data.model, 'up-model');
      assert.equal(data.choices[0]!.message.content, 'hello sluice');
      assert.equal(data.choices[0]!.finish_reason, 'stop');
      assert.ok(data.usage!.total_tokens > 0);
      const rid = response.headers.get('x-request-id')!;
      assert.match(rid, REQUEST_ID);
      assert.equal(data.id.slice('chatcmpl_'.length), rid.slice(4));
      const sent = mock.requests.at(-1)!;
      assert.equal(sent.headers.authorization, `Bearer ${OPENAI_MOCK_KEY}`, 'the provider credential is injected');
      assert.equal(sent.body.model, 'up-model');
    });

    test('non-stream: the reply is the upstream\'s own text, with only what the contract owns written into it', async () => {
      // Formatting a re-serialisation would change: spacing, 1.0, an exponent, a \u escape, a value JSON.stringify cannot keep.
      // Short, as most answers are: every size is spliced.
      const upstream = '{"id": "up-1", "object": "chat.completion", "created": 7, "model": "up-model-2024", "choices": [{"index": 0, '
        + '"message": {"role": "assistant", "content": "caf\\u00e9", "future": 1e400}, "logprobs": {"content": [{"token": "x", "logprob": -1.0E-5}]}, '
        + '"finish_reason": "stop"}], "usage": null, "temperature_echo": 1.0}';
      mock.replay = { text: upstream };
      try {
        const res = await post({ model: 'up-model', messages: [{ role: 'user', content: 'hi' }] }, { 'gateway-trace': 'true' });
        assert.equal(res.status, 200);
        const text = await res.text();
        const body = JSON.parse(text);
        const rid = res.headers.get('x-request-id')!;
        assert.equal(body.id, `chatcmpl_${rid.slice(4)}`);
        assert.equal(body.model, 'up-model');
        assert.equal(body.created, 7);
        assert.ok(body.usage.total_tokens > 0, 'usage: null is replaced by an estimate');
        assert.equal(body.gateway.request_id, rid);
        // Everything else byte for byte, in its place.
        const rest = upstream.slice(upstream.indexOf('"choices"'), upstream.indexOf(', "usage"'));
        assert.ok(text.includes(rest), text);
        assert.ok(text.includes('"temperature_echo": 1.0}'.slice(0, -1)), text);
        assert.ok(text.startsWith(`{"id": ${JSON.stringify(body.id)}, "object": "chat.completion", "created": 7, "model": "up-model", "choices": [`), text);
      } finally { mock.replay = undefined; }
    });

    test('stream: a chunk without an id keeps its own members once, under the gateway\'s id and model', async () => {
      // Some OpenAI-compatible servers leave the id out of a chunk (here its usage chunk).
      const usage = { prompt_tokens: 2, completion_tokens: 1, total_tokens: 3 };
      mock.replay = { sse: [
        { data: { id: 'up-1', object: 'chat.completion.chunk', created: 5, model: 'up-model-2024', choices: [{ index: 0, delta: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }] } },
        { data: { object: 'chat.completion.chunk', created: 5, model: 'up-model-2024', choices: [], usage, extra: 1 } },
        { data: '[DONE]' },
      ] };
      try {
        const res = await post({ model: 'up-model', messages: [{ role: 'user', content: 'hi' }], stream: true });
        const rid = res.headers.get('x-request-id')!;
        const lines = (await readSse(res)).filter((e) => e !== 'data: [DONE]').map((e) => e.slice('data: '.length));
        const last = lines.at(-1)!;
        // A repeated key would be lost to JSON.parse's last-wins: count them in the text.
        for (const key of ['"id"', '"object"', '"created"', '"model"']) assert.equal(last.split(`${key}:`).length - 1, 1, `${key} once in ${last}`);
        assert.deepEqual(JSON.parse(last), { id: `chatcmpl_${rid.slice(4)}`, object: 'chat.completion.chunk', created: 5, model: 'up-model', choices: [], usage, extra: 1 });
      } finally { mock.replay = undefined; }
    });

    test('stream: spaced chunks keep their own text, and an event sent over several data lines reaches the client as one line', async () => {
      // Python's json.dumps spaces its separators; SSE lets an event's data run over several `data:` lines.
      const spaced = '{"id": "up-3", "object": "chat.completion.chunk", "created": 5, "model": "up-model-2024", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "hi"}, "finish_reason": null}], "x_extra": 1.0}';
      const split = '{"id":"up-3","object":"chat.completion.chunk","created":5,"model":"up-model-2024","choices":[\ndata: {"index":0,"delta":{"content":" there"},"finish_reason":"stop"}]}';
      mock.replay = { sse: [{ data: spaced }, { data: split }, { data: '[DONE]' }] };
      try {
        const res = await post({ model: 'up-model', messages: [{ role: 'user', content: 'hi' }], stream: true });
        const rid = res.headers.get('x-request-id')!;
        const events = await readSse(res);
        // A line break inside an event ended the client's data line early: the openai SDK failed to parse it.
        for (const e of events) assert.match(e, /^data: [^\n]*$/, e);
        assert.equal(events.at(-1), 'data: [DONE]');
        const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice('data: '.length)));
        assert.equal(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), 'hi there');
        assert.ok(chunks.every((c) => c.id === `chatcmpl_${rid.slice(4)}` && c.model === 'up-model'));
        // The spaced chunk as the upstream wrote it (JSON.stringify would write 1.0 as 1), with the gateway's id and model.
        assert.equal(events[0], `data: {"id":"chatcmpl_${rid.slice(4)}", "object": "chat.completion.chunk", "created": 5, "model":"up-model", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "hi"}, "finish_reason": null}], "x_extra": 1.0}`);
      } finally { mock.replay = undefined; }
    });

    test('stream: an upstream that ends after its finish reason, with no [DONE], ends the stream whole', async () => {
      // Some OpenAI-compatible servers close after the finish; that chunk goes on unparsed, and still counts as the end.
      const chunk = (delta: object, finish: string | null) => ({ data: `{"id":"up-2","object":"chat.completion.chunk","created":5,"model":"up-model-2024","choices":[{"index":0,"delta":${JSON.stringify(delta)},"finish_reason":${JSON.stringify(finish)}}]}` });
      mock.replay = { sse: [chunk({ role: 'assistant', content: 'one' }, null), chunk({ content: ' two' }, null), chunk({ content: ' three' }, null), chunk({}, 'stop')] };
      try {
        const res = await post({ model: 'up-model', messages: [{ role: 'user', content: 'hi' }], stream: true });
        const events = await readSse(res);
        assert.ok(!events.some((e) => e.startsWith('event: error')), events.join('\n'));
        assert.equal(events.at(-1), 'data: [DONE]');
        const chunks = events.filter((e) => e !== 'data: [DONE]').map((e) => JSON.parse(e.slice('data: '.length)));
        assert.equal(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), 'one two three');
        assert.equal(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0].finish_reason, 'stop');
        assert.ok(chunks.at(-1).usage.total_tokens > 0, 'an estimate, as the upstream sent no usage');
        const trace = await gw.traces.waitFor(res.headers.get('x-request-id')!);
        assert.equal(trace.stream_aborted, false);
        assert.equal(trace.status_code, 200);
      } finally { mock.replay = undefined; }
    });

    test('stream: with n = 2, a body that ends after one choice\'s finish, with no [DONE], was cut short: the SSE error event', async () => {
      const chunk = (index: number, delta: object, finish: string | null) => ({ data: `{"id":"up-4","object":"chat.completion.chunk","created":5,"model":"up-model-2024","choices":[{"index":${index},"delta":${JSON.stringify(delta)},"finish_reason":${JSON.stringify(finish)}}]}` });
      const both = [chunk(0, { role: 'assistant', content: 'A' }, null), chunk(1, { role: 'assistant', content: 'B' }, null), chunk(0, {}, 'stop')];
      try {
        mock.replay = { sse: [...both, chunk(1, { content: ' partial' }, null)] };
        const cut = await post({ model: 'up-model', n: 2, messages: [{ role: 'user', content: 'hi' }], stream: true });
        const events = await readSse(cut);
        assert.ok(events.at(-1)!.startsWith('event: error'), events.join('\n'));
        assert.equal((await gw.traces.waitFor(cut.headers.get('x-request-id')!)).stream_aborted, true);
        // Both finished: whole, [DONE] or not.
        mock.replay = { sse: [...both, chunk(1, {}, 'stop')] };
        const whole = await readSse(await post({ model: 'up-model', n: 2, messages: [{ role: 'user', content: 'hi' }], stream: true }));
        assert.equal(whole.at(-1), 'data: [DONE]', whole.join('\n'));
        // Counted by index: choice 0's finish again (as on a usage chunk) is not choice 1's.
        mock.replay = { sse: [...both, chunk(0, {}, 'stop'), chunk(1, { content: ' partial' }, null)] };
        const repeated = await readSse(await post({ model: 'up-model', n: 2, messages: [{ role: 'user', content: 'hi' }], stream: true }));
        assert.ok(repeated.at(-1)!.startsWith('event: error'), repeated.join('\n'));
        // Both finishing in one chunk is both.
        const twoInOne = { data: '{"id":"up-4","object":"chat.completion.chunk","created":5,"model":"up-model-2024","choices":[{"index":0,"delta":{},"finish_reason":"stop"},{"index":1,"delta":{},"finish_reason":"stop"}]}' };
        mock.replay = { sse: [both[0]!, both[1]!, twoInOne] };
        const together = await readSse(await post({ model: 'up-model', n: 2, messages: [{ role: 'user', content: 'hi' }], stream: true }));
        assert.equal(together.at(-1), 'data: [DONE]', together.join('\n'));
      } finally { mock.replay = undefined; }
    });

    test('stream: deltas arrive in order and the final chunk carries usage', async () => {
      const stream = await client.chat.completions.create({ model: 'up-model', stream: true, messages: [{ role: 'user', content: 'one two three four' }] });
      let text = '';
      let last: OpenAI.Chat.Completions.ChatCompletionChunk | undefined;
      let finish: string | null | undefined;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
        last = chunk;
      }
      assert.equal(text, 'one two three four');
      assert.equal(finish, 'stop');
      assert.ok(last?.usage && last.usage.total_tokens === last.usage.prompt_tokens + last.usage.completion_tokens);
      assert.equal(mock.requests.at(-1)!.body.stream_options.include_usage, true, 'the upstream is asked for usage');
    });

    test('stream framing: SSE headers, data lines, usage last, gateway chunk just before [DONE]', async () => {
      const res = await post({ model: 'up-model', stream: true, messages: [{ role: 'user', content: 'a b c' }] }, { 'gateway-trace': 'true' });
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type')!, /^text\/event-stream/);
      const rid = res.headers.get('x-request-id')!;
      const events = await readSse(res);
      assert.equal(events.at(-1), 'data: [DONE]');
      for (const e of events) assert.match(e, /^data: /);
      const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)));
      const gwChunk = chunks.at(-1);
      assert.deepEqual(gwChunk.choices, []);
      assert.equal(gwChunk.gateway.provider, 'up');
      assert.equal(gwChunk.gateway.model, 'up-model');
      assert.equal(gwChunk.gateway.route_reason, 'default');
      assert.equal(gwChunk.gateway.request_id, rid);
      assert.ok(gwChunk.usage, 'the final data chunk carries usage');
      assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk'));
      const trace = await gw.traces.waitFor(rid);
      assert.equal(trace.streamed, true);
      assert.equal(trace.cost_usd, gwChunk.gateway.cost_usd);
      assert.ok(trace.ttfb_ms !== null && trace.ttfb_ms >= 0 && trace.ttfb_ms <= trace.latency_ms + 1);
    });

    test('Gateway-Trace on JSON: the block agrees with the trace and the pricing', async () => {
      const res = await post({ model: 'up-alias', messages: [{ role: 'user', content: 'price me' }] }, { 'gateway-trace': 'true' });
      const body = (await res.json()) as any;
      assert.equal(res.status, 200);
      const g = body.gateway;
      assert.deepEqual(Object.keys(g).sort(), ['cost_usd', 'latency_ms', 'model', 'provider', 'redactions', 'request_id', 'route_reason']);
      const expected = (body.usage.prompt_tokens * 1 + body.usage.completion_tokens * 2) / 1e6;
      assert.ok(Math.abs(g.cost_usd - expected) < 1e-12);
      const trace = await gw.traces.waitFor(g.request_id);
      assert.equal(trace.organization_id, 'acme');
      assert.equal(trace.requested_model, 'up-alias');
      assert.equal(trace.model, 'up-model');
      assert.equal(trace.status_code, 200);
      assert.equal(trace.cost_usd, g.cost_usd);
      assert.equal(trace.prompt_tokens, body.usage.prompt_tokens);
    });

    test('Gateway-Dry-Run and Gateway-Trace take true or false in any case; any other value is 400 naming the header, and nothing is called', async () => {
      const msg = { model: 'up-model', messages: [{ role: 'user', content: 'x' }] };
      const calls = mock.requests.length;
      const dry: any = await (await post(msg, { 'gateway-dry-run': 'TRUE' })).json();
      assert.equal(dry.object, 'route.resolution');
      assert.equal(mock.requests.length, calls, 'a dry run calls nothing');
      const plain: any = await (await post(msg, { 'gateway-dry-run': 'False', 'gateway-trace': 'True' })).json();
      assert.equal(plain.object, 'chat.completion');
      assert.equal(plain.gateway.model, 'up-model');
      const called = mock.requests.length;
      for (const [name, value] of [['Gateway-Dry-Run', '1'], ['Gateway-Dry-Run', 'yes'], ['Gateway-Trace', 'on'], ['Gateway-Trace', '0']] as const) {
        for (const path of ['/v1/chat/completions', '/v1/embeddings', '/v1/responses']) {
          const res = await fetch(`${gw.url}${path}`, {
            method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', [name]: value },
            body: JSON.stringify(path === '/v1/embeddings' ? { model: 'up-model', input: 'x' } : path === '/v1/responses' ? { model: 'up-model', input: 'x' } : msg),
          });
          assert.equal(res.status, 400, `${path} ${name}: ${value}`);
          const err = ((await res.json()) as any).error;
          assert.equal(err.code, 'invalid_request');
          assert.equal(err.param, name);
        }
      }
      assert.equal(mock.requests.length, called, 'a refused switch calls nothing');
    });

    test('no Gateway-Trace header: no gateway block', async () => {
      const body: any = await (await post({ model: 'up-model', messages: [{ role: 'user', content: 'x' }] })).json();
      assert.equal(body.gateway, undefined);
    });

    test('an upstream failure before the first byte is a JSON error, streamed or not', async () => {
      mock.fault = 'error-before-first-byte';
      try {
        for (const stream of [false, true]) {
          const res = await post({ model: 'up-model', stream, messages: [{ role: 'user', content: 'x' }] });
          assert.equal(res.status, 502);
          assert.match(res.headers.get('content-type')!, /application\/json/);
          const body = (await res.json()) as any;
          assert.equal(body.error.code, 'upstream_error');
          assert.match(body.request_id, /^req_/);
        }
        await assert.rejects(client.chat.completions.create({ model: 'up-model', messages: [{ role: 'user', content: 'x' }] }), (e: any) => e.status === 502);
      } finally { mock.fault = 'none'; }
    });

    test('a drop mid-stream ends with the SSE error event and no [DONE]', async () => {
      mock.fault = 'drop-mid-stream';
      try {
        const res = await post({ model: 'up-model', stream: true, messages: [{ role: 'user', content: 'a b c d e f' }] });
        assert.equal(res.status, 200);
        const rid = res.headers.get('x-request-id')!;
        const events = await readSse(res);
        const last = events.at(-1)!;
        assert.match(last, /^event: error\ndata: /);
        const payload = JSON.parse(last.split('\ndata: ')[1]!);
        assert.equal(payload.error.code, 'upstream_error');
        assert.equal(payload.error.type, 'gateway_error');
        assert.equal(typeof payload.error.message, 'string');
        assert.equal(payload.request_id, rid);
        assert.ok(!events.includes('data: [DONE]'));
        assert.ok(events.some((e) => e.includes('"content":"a "')), 'output before the drop was forwarded');
        const trace = await gw.traces.waitFor(rid);
        assert.equal(trace.stream_aborted, true);
        assert.equal(trace.status_code, 200);
      } finally { mock.fault = 'none'; }
    });

    test('an upstream error event mid-stream also becomes the SSE error event', async () => {
      mock.fault = 'error-event-mid-stream';
      try {
        const res = await post({ model: 'up-model', stream: true, messages: [{ role: 'user', content: 'a b c d' }] });
        const events = await readSse(res);
        assert.match(events.at(-1)!, /^event: error\n/);
        assert.match(events.at(-1)!, /mock upstream overloaded/);
      } finally { mock.fault = 'none'; }
    });

    test('a client that disconnects mid-stream aborts the upstream request', async () => {
      mock.fault = 'slow-chunks';
      mock.slowMs = 150;
      const before = mock.aborted;
      try {
        const ac = new AbortController();
        const res = await post({ model: 'up-model', stream: true, messages: [{ role: 'user', content: 'w1 w2 w3 w4 w5 w6 w7 w8' }] });
        const reader = res.body!.getReader();
        await reader.read();
        await reader.cancel();
        ac.abort();
        const deadline = Date.now() + 3_000;
        while (mock.aborted === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
        assert.equal(mock.aborted, before + 1, 'the upstream connection was closed by the gateway');
        const rid = res.headers.get('x-request-id')!;
        const trace = await gw.traces.waitFor(rid);
        assert.equal(trace.stream_aborted, true);
      } finally { mock.fault = 'none'; }
    });

    test('backpressure: a client that stops reading stops the gateway reading the upstream; nothing is lost', async () => {
      const n = 50_000; // about 58 MB of SSE: more than every socket buffer on the path can hold
      const res = await post({ model: 'up-model', stream: true, mock_big_stream: n, messages: [{ role: 'user', content: 'big' }] });
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let text = decoder.decode((await reader.read()).value, { stream: true });
      await new Promise((r) => setTimeout(r, 1_000));
      const stalled = mock.bigSocket!.bytesWritten;
      await new Promise((r) => setTimeout(r, 500));
      assert.ok(mock.bigSocket!.bytesWritten - stalled < 256 * 1024, 'the upstream stays paused while the client does not read');
      assert.ok(stalled < n * 1024 * 0.5, `only ${stalled} bytes of about ${n * 1170} were read upstream`);
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
      }
      assert.equal(text.match(/x{1024}/g)?.length, n, 'every chunk arrived once the client read again');
      assert.ok(text.endsWith('data: [DONE]\n\n'));
    });

    test('resolution: alias and auto give route_reason default; auto skips models too small', async () => {
      const long = 'word '.repeat(200);
      const res = await post({ model: 'auto', messages: [{ role: 'user', content: long }] }, { 'gateway-trace': 'true' });
      const body = (await res.json()) as any;
      assert.equal(body.gateway.model, 'up-model', 'up-small is cheaper but its context window is too small');
      const short: any = await (await post({ model: 'auto', messages: [{ role: 'user', content: 'hi' }] }, { 'gateway-trace': 'true' })).json();
      assert.equal(short.gateway.model, 'up-small', 'the cheapest fitting model wins');
      assert.equal(short.gateway.route_reason, 'default');
    });

    test('unknown, inactive and unconfigured models are clear 4xx errors', async () => {
      let res = await post({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] });
      assert.equal(res.status, 404);
      assert.equal(((await res.json()) as any).error.code, 'model_not_found');
      res = await post({ model: 'mock-echo', messages: [{ role: 'user', content: 'x' }] });
      assert.equal(res.status, 404, 'a model another organisation activated is not this one\'s');
      res = await post({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] });
      assert.equal(res.status, 409);
      assert.equal(((await res.json()) as any).error.code, 'model_not_configured');
    });

    test('wrong field types are 400 invalid_request naming the field', async () => {
      const cases: Array<[unknown, string]> = [
        [{ model: 5, messages: [] }, 'model'],
        [{ model: 'up-model' }, 'messages'],
        [{ model: 'up-model', messages: [{ role: 'user', content: 7 }] }, 'messages.0.content'],
        [{ model: 'up-model', messages: [{ role: 'wizard', content: 'x' }] }, 'messages.0.role'],
        [{ model: 'up-model', stream: 'yes', messages: [{ role: 'user', content: 'x' }] }, 'stream'],
        [{ model: 'up-model', temperature: 9, messages: [{ role: 'user', content: 'x' }] }, 'temperature'],
      ];
      for (const [body, param] of cases) {
        const res = await post(body);
        assert.equal(res.status, 400, JSON.stringify(body));
        const err = ((await res.json()) as any).error;
        assert.equal(err.code, 'invalid_request');
        assert.equal(err.param, param);
      }
      const bad = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: '{"model":' });
      assert.equal(bad.status, 400);
      assert.equal(((await bad.json()) as any).error.code, 'invalid_json');
    });

    test('the caller\'s extra fields pass through to an OpenAI-compatible upstream', async () => {
      await post({ model: 'up-model', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_object' }, temperature: 0.2 });
      const sent = mock.requests.at(-1)!.body;
      assert.deepEqual(sent.response_format, { type: 'json_object' });
      assert.equal(sent.temperature, 0.2);
    });
  });
}
