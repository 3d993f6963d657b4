// The Responses API on the native path: a provider with responses_api passes
// the caller's body through (every field kept, model and DLP'd input
// replaced) and keeps the upstream's resp_ id, so previous_response_id chains
// natively (function calls and their outputs included); a chain begun on a
// translated provider is replayed in full. Storing off reaches the upstream as
// store: false, and an upstream id colliding across organisations overwrites
// nothing. responses.parse works with a zod schema.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { z } from 'zod';
import { zodTextFormat } from 'openai/helpers/zod';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import { HTTP_KINDS, startGateway, type TestGateway } from './helpers/gateway.js';
import { readSse, UPSTREAM_KEY_ENV, chatAndNativeUpstreams } from './helpers/fixtures.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

for (const http of HTTP_KINDS) {
  describe(`responses API (native) over ${http}`, () => {
    let mock: OpenAIMock;
    let gw: TestGateway;
    let client: OpenAI;
    let other: OpenAI;
    let key: string;

    before(async () => {
      mock = await startOpenAIMock();
      gw = await startGateway({
        http,
        env: { [UPSTREAM_KEY_ENV]: OPENAI_MOCK_KEY },
        config: {
          ...chatAndNativeUpstreams(mock.url),
          organizations: [
            { id: 'acme', models: ['up-model', 'nat-model'] }, { id: 'beta', models: ['nat-model'] },
            { id: 'nostore', models: ['nat-model'], responses: { store: false } },
          ],
        },
      });
      key = await gw.key('acme');
      client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
      other = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: await gw.key('beta'), maxRetries: 0 });
    });
    after(async () => { await gw.close(); await mock.close(); });

    test('JSON: every field reaches the upstream, its id and unknown fields come back, model and gateway block written', async () => {
      const res = await fetch(`${gw.url}/v1/responses`, {
        method: 'POST', headers: { authorization: `Bearer ${key}`, 'gateway-trace': 'true' },
        body: JSON.stringify({ model: 'nat-alias', input: 'hello native', include: ['reasoning.encrypted_content'], future_field: { a: 1 }, metadata: { k: 'v' } }),
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-ratelimit-remaining-requests'), '99');
      const body: any = await res.json();
      assert.match(body.id, /^resp_mock/);
      assert.equal(body.model, 'nat-model');
      assert.equal(body.mock_extra_field, 'kept');
      assert.equal(body.gateway.provider, 'nat');
      assert.equal(body.gateway.route_reason, 'default');
      const sent = mock.requests.at(-1)!;
      assert.ok(sent.url.endsWith('/v1/responses'));
      assert.equal(sent.headers.authorization, `Bearer ${OPENAI_MOCK_KEY}`);
      assert.deepEqual(sent.body, { model: 'nat-model', input: 'hello native', include: ['reasoning.encrypted_content'], future_field: { a: 1 }, metadata: { k: 'v' } });
      const trace = await gw.traces.waitFor(res.headers.get('x-request-id')!);
      assert.equal(trace.endpoint, 'responses');
      assert.equal(trace.prompt_tokens, 9);
      assert.ok(trace.cost_usd > 0);
    });

    test('background: true is a 400 naming it before any upstream call; false goes upstream as sent', async () => {
      const n = mock.requests.length;
      await assert.rejects(client.responses.create({ model: 'nat-model', input: 'later', background: true }), (e: any) => {
        assert.equal(e.status, 400);
        assert.equal(e.param, 'background');
        return true;
      });
      assert.equal(mock.requests.length, n);
      const ok = await client.responses.create({ model: 'nat-model', input: 'now', background: false });
      assert.equal(ok.status, 'completed');
      assert.equal(mock.requests.at(-1)!.body.background, false);
    });

    test('byte for byte both ways: only model (and the gateway block) is written into the caller\'s and the upstream\'s own text', async () => {
      const sent = '{"model":"nat-alias","input":"bytes","temperature":1.0,"future":{"n":1e2,"s":"\\u00e9"},"top_p":1}';
      const item = '{"type":"message","id":"msg_b","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"text":"\\u00e9"}]}';
      const shell = (status: string, output: string) => `{"id":"resp_bytes","object":"response","created_at":1.7e9,"status":"${status}","model":"up-x","output":[${output}],"temperature":1.0,"usage":${status === 'completed' ? '{"input_tokens":1,"output_tokens":1,"total_tokens":2}' : 'null'},"later_field":{"x":1E-7}}`;
      const own = (status: string, output: string, gateway = '') => shell(status, output).replace('"model":"up-x"', '"model":"nat-model"').replace(/}$/, `${gateway}}`);
      const post = (body: string, trace = false) => fetch(`${gw.url}/v1/responses`, { method: 'POST', headers: { authorization: `Bearer ${key}`, ...(trace ? { 'gateway-trace': 'true' } : {}) }, body });
      try {
        mock.replay = { text: shell('completed', item) };
        const res = await post(sent);
        assert.equal(res.status, 200);
        assert.equal(mock.requests.at(-1)!.text, sent.replace('"nat-alias"', '"nat-model"'));
        assert.equal(await res.text(), own('completed', item));
        const traced = await (await post(sent, true)).text();
        const gateway = JSON.parse(traced).gateway;
        assert.equal(gateway.provider, 'nat');
        assert.equal(traced, own('completed', item, `,"gateway":${JSON.stringify(gateway)}`));

        const events: Array<[string, string]> = [
          ['response.created', `{"type":"response.created","sequence_number":0,"response":${shell('in_progress', '')}}`],
          ['response.output_text.delta', '{"type":"response.output_text.delta","sequence_number":1,"item_id":"msg_b","output_index":0,"content_index":0,"delta":"\\u00e9","logprobs":[]}'],
          ['response.completed', `{"type":"response.completed","sequence_number":2,"response":${shell('completed', item)}}`],
        ];
        mock.replay = { sse: events.map(([event, data]) => ({ event, data })) };
        const streamed = await post(sent.replace('{', '{"stream":true,'));
        assert.equal(mock.requests.at(-1)!.text, sent.replace('{', '{"stream":true,').replace('"nat-alias"', '"nat-model"'));
        assert.deepEqual(await readSse(streamed), [
          `event: response.created\ndata: ${events[0]![1].replace(shell('in_progress', ''), own('in_progress', ''))}`,
          `event: response.output_text.delta\ndata: ${events[1]![1]}`,
          `event: response.completed\ndata: ${events[2]![1].replace(shell('completed', item), own('completed', item))}`,
        ]);
      } finally { mock.replay = undefined; }
    });

    test('stream: an event the upstream sent over several data lines reaches the client on one, and the openai SDK reads it', async () => {
      const shell = (status: string) => `{"id":"resp_ml","object":"response","created_at":1,"status":"${status}","model":"up-x","output":[],"usage":null}`;
      try {
        mock.replay = { sse: [
          { event: 'response.created', data: `{"type":"response.created",\ndata: "sequence_number":0,"response":${shell('in_progress')}}` },
          { event: 'response.completed', data: `{"type":"response.completed","sequence_number":1,"response":${shell('completed')}}` },
        ] };
        const raw = await fetch(`${gw.url}/v1/responses`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: JSON.stringify({ model: 'nat-model', input: 'x', stream: true }) });
        const events = await readSse(raw);
        // Relayed as written, the line break ended the data line: the openai SDK failed to parse `{"type":"response.created",`.
        for (const e of events) assert.match(e, /^event: [\w.]+\ndata: [^\n]*$/, e);
        assert.equal(JSON.parse(events[0]!.split('\ndata: ')[1]!).response.model, 'nat-model');
        const seen: string[] = [];
        for await (const ev of client.responses.stream({ model: 'nat-model', input: 'x' })) seen.push(ev.type);
        assert.deepEqual(seen, ['response.created', 'response.completed']);
      } finally { mock.replay = undefined; }
    });

    test('stream: the upstream events pass through in order; finalResponse() has the gateway model', async () => {
      const stream = client.responses.stream({ model: 'nat-model', input: 'one two three' });
      const seqs: number[] = [];
      for await (const ev of stream) seqs.push(ev.sequence_number);
      const final = await stream.finalResponse();
      assert.equal(final.output_text, 'one two three');
      assert.equal(final.model, 'nat-model');
      assert.deepEqual(seqs, seqs.map((_, i) => i));
      assert.equal(mock.requests.at(-1)!.body.stream, true);
      const raw = await fetch(`${gw.url}/v1/responses`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: JSON.stringify({ model: 'nat-model', input: 'a b', stream: true }) });
      const events = await readSse(raw);
      assert.match(events[0]!, /^event: response\.created\ndata: \{"type":"response\.created"/);
      assert.match(events.at(-1)!, /^event: response\.completed\n/);
    });

    test('stream: an error event before any other is a failed call, retried; a caller\'s error code comes back as its 400', async () => {
      const failed = { transcript: { sse: [{ event: 'error', data: { type: 'error', code: 'server_error', message: 'The server had an error.', param: null, sequence_number: 0 } }] } };
      mock.script.push(failed);
      const n = mock.requests.length;
      const seen: string[] = [];
      for await (const ev of client.responses.stream({ model: 'nat-model', input: 'one two' })) seen.push(ev.type);
      assert.equal(seen[0], 'response.created');
      assert.equal(seen.at(-1), 'response.completed');
      assert.ok(!seen.includes('error'), seen.join());
      assert.equal(mock.requests.length - n, 2, 'retried once');

      mock.script.push({ transcript: { sse: [{ event: 'error', data: { type: 'error', code: 'invalid_image_url', message: 'The image URL could not be read.', param: 'input', sequence_number: 0 } }] } });
      await assert.rejects(client.responses.create({ model: 'nat-model', input: 'look', stream: true }), (e: any) => {
        assert.equal(e.status, 400);
        assert.equal(e.code, 'invalid_image_url');
        assert.equal(e.param, 'input');
        assert.equal(e.error.message, 'The image URL could not be read.');
        return true;
      });
      assert.equal(mock.requests.length - n, 3, 'not retried');
    });

    test('previous_response_id: a native chain goes upstream as is; another organisation gets 404 and the upstream is not called', async () => {
      const first = await client.responses.create({ model: 'nat-model', input: 'remember me' });
      const second = await client.responses.create({ model: 'nat-model', input: 'and now?', previous_response_id: first.id });
      assert.equal(mock.requests.at(-1)!.body.previous_response_id, first.id);
      assert.equal(second.output_text, 'and now?');
      const before = mock.requests.length;
      await assert.rejects(other.responses.create({ model: 'nat-model', input: 'steal', previous_response_id: first.id }), (e: any) => e.status === 404 && e.param === 'previous_response_id');
      assert.equal(mock.requests.length, before);
      const got = await client.responses.retrieve(second.id);
      assert.equal(got.output_text, 'and now?');
      await assert.rejects(other.responses.retrieve(second.id), (e: any) => e.status === 404);
    });

    test('item_reference is checked against this organisation\'s stored items: its own native item goes as the reference, another organisation\'s is a 404 with no upstream call, a translated item goes whole', async () => {
      const first = await client.responses.create({ model: 'nat-model', input: 'acme secret 42' });
      const ref = { type: 'item_reference', id: first.output[0]!.id } as any;
      assert.doesNotMatch(ref.id, /^msg_[0-9a-f]{32}_\d+$/, 'the upstream\'s own id');
      await client.responses.create({ model: 'nat-model', input: [ref, { role: 'user', content: 'repeat' }] });
      assert.deepEqual(mock.requests.at(-1)!.body.input, [ref, { role: 'user', content: 'repeat' }]);
      const before = mock.requests.length;
      for (const model of ['nat-model', 'up-model']) {
        await assert.rejects(other.responses.create({ model, input: [ref, { role: 'user', content: 'repeat' }] }), (e: any) => e.status === 404 && e.param === 'input.0.id', model);
      }
      assert.equal(mock.requests.length, before, 'nothing reached the upstream');
      // An item the translated path made: the upstream never held it, so it goes as the item.
      const translated = await client.responses.create({ model: 'up-model', input: 'from the chat path' });
      await client.responses.create({ model: 'nat-model', input: [{ type: 'item_reference', id: translated.output[0]!.id } as any] });
      assert.deepEqual(mock.requests.at(-1)!.body.input, [
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', annotations: [], logprobs: [], text: 'from the chat path' }] },
      ]);
      // And the translated path reads a native item too.
      await client.responses.create({ model: 'up-model', input: [ref] });
      assert.equal(mock.requests.at(-1)!.body.messages[0].role, 'assistant');
    });

    const weather = [{ type: 'function' as const, name: 'get_weather', description: 'Weather in a city', strict: true, parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'], additionalProperties: false } }];

    test('function calling: the SDK gets a function_call, and the second turn through previous_response_id chains natively', async () => {
      const first = await client.responses.create({ model: 'nat-model', input: 'weather in Paris?', tools: weather });
      const call = first.output.find((it) => it.type === 'function_call');
      assert.ok(call && call.type === 'function_call', JSON.stringify(first.output));
      assert.equal(call.name, 'get_weather');
      assert.deepEqual(JSON.parse(call.arguments), { location: 'Paris' });
      assert.deepEqual(mock.requests.at(-1)!.body.tools, weather);
      const second = await client.responses.create({
        model: 'nat-model', previous_response_id: first.id, tools: weather,
        input: [{ type: 'function_call_output', call_id: call.call_id, output: '22 degrees' }],
      });
      assert.equal(second.output_text, 'Tool said: 22 degrees');
      assert.equal(mock.requests.at(-1)!.body.previous_response_id, first.id);
      // A made-up call id is refused by the upstream, as at OpenAI: the chain really is the upstream's.
      await assert.rejects(client.responses.create({
        model: 'nat-model', previous_response_id: first.id, input: [{ type: 'function_call_output', call_id: 'call_other', output: 'x' }],
      }), (e: any) => e.status === 400);
    });

    test('function calling, streamed: the call\'s typed events pass through and finalResponse() holds the call', async () => {
      const stream = client.responses.stream({ model: 'nat-model', input: 'weather?', tools: weather });
      const types: string[] = [];
      let args = '';
      for await (const ev of stream) {
        types.push(ev.type);
        if (ev.type === 'response.function_call_arguments.delta') args += ev.delta;
      }
      const final = await stream.finalResponse();
      assert.deepEqual(types.filter((t) => t.startsWith('response.output_item') || t.startsWith('response.function_call')), [
        'response.output_item.added', 'response.function_call_arguments.delta', 'response.function_call_arguments.delta',
        'response.function_call_arguments.delta', 'response.function_call_arguments.done', 'response.output_item.done',
      ]);
      const call = final.output[0]!;
      assert.equal(call.type, 'function_call');
      assert.equal(args, '{"location":"Paris"}');
      assert.equal(call.type === 'function_call' && call.arguments, args);
      const next = await client.responses.create({
        model: 'nat-model', previous_response_id: final.id, input: [{ type: 'function_call_output', call_id: call.type === 'function_call' ? call.call_id : '', output: 'sunny' }],
      });
      assert.equal(next.output_text, 'Tool said: sunny');
    });

    test('responses.parse with a zod schema: text.format reaches the upstream as sent, output_parsed is the parsed answer', async () => {
      const Person = z.object({ name: z.string(), age: z.number() });
      const format = zodTextFormat(Person, 'person');
      // The mock echoes the input, so the answer is this JSON.
      const r = await client.responses.parse({ model: 'nat-alias', input: '{"name":"Ada","age":36}', text: { format } });
      assert.deepEqual(r.output_parsed, { name: 'Ada', age: 36 });
      assert.equal(r.model, 'nat-model');
      const sent = mock.requests.at(-1)!;
      assert.ok(sent.url.endsWith('/v1/responses'));
      assert.equal(sent.body.text.format.type, 'json_schema');
      assert.equal(sent.body.text.format.name, 'person');
      assert.equal(sent.body.text.format.strict, true);
      assert.deepEqual(sent.body.text.format.schema, JSON.parse(JSON.stringify(format.schema)));
    });

    test('storing off (per request or per organisation) sends store: false upstream, so the upstream keeps nothing either', async () => {
      const nostore = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: await gw.key('nostore'), maxRetries: 0 });
      const cases: Array<[OpenAI, object]> = [[client, { store: false }], [nostore, {}], [nostore, { store: true }], [nostore, { store: true, stream: true }]];
      for (const [c, extra] of cases) {
        const r: any = await c.responses.create({ model: 'nat-model', input: 'forget me', ...extra } as any);
        const label = JSON.stringify(extra);
        assert.equal(mock.requests.at(-1)!.body.store, false, label);
        if (!('stream' in extra)) assert.equal(r.store, false, label);
        else for await (const _ of r) { /* drain */ }
      }
      await client.responses.create({ model: 'nat-model', input: 'keep me', store: true });
      assert.equal(mock.requests.at(-1)!.body.store, true, 'what the caller sent, when storing is on');
    });

    test('an upstream id that collides with another organisation\'s stored response does not overwrite it', async () => {
      const answer = (text: string) => ({
        json: {
          id: 'resp_collide', object: 'response', created_at: 1_700_000_000, status: 'completed', model: 'nat-model', usage: null,
          output: [{ id: 'msg_collide', type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', annotations: [], text }] }],
        },
      });
      try {
        mock.replay = answer('acme secret');
        assert.equal((await client.responses.create({ model: 'nat-model', input: 'x' })).id, 'resp_collide');
        // Stored first (a read on this instance waits for its pending write).
        assert.equal((await client.responses.retrieve('resp_collide')).output_text, 'acme secret');
        mock.replay = answer('beta text');
        assert.equal((await other.responses.create({ model: 'nat-model', input: 'y' })).id, 'resp_collide');
      } finally { mock.replay = undefined; }
      assert.equal((await client.responses.retrieve('resp_collide')).output_text, 'acme secret');
      await assert.rejects(other.responses.retrieve('resp_collide'), (e: any) => e.status === 404);
      const rows = await gw.app.services.pool.query('SELECT organization_id, input FROM responses WHERE id = $1', ['resp_collide']);
      assert.deepEqual(rows.rows, [{ organization_id: 'acme', input: [{ type: 'message', role: 'user', content: 'x' }] }]);
    });

    test('input_items of a native response: the stored input in OpenAI\'s shape, a string input as one input_text part, with an id stable across calls', async () => {
      const r = await client.responses.create({ model: 'nat-model', input: 'list me' });
      const a = await client.responses.inputItems.list(r.id);
      const b = await client.responses.inputItems.list(r.id, { order: 'asc', limit: 1 });
      assert.deepEqual(a.data, [{ id: a.data[0]!.id, type: 'message', role: 'user', content: [{ type: 'input_text', text: 'list me' }], status: 'completed' }]);
      assert.match(a.data[0]!.id!, /^msg_[0-9a-f]{48}$/);
      assert.deepEqual(b.data, a.data);
      assert.equal(b.has_more, false);
    });

    test('a chain begun on a translated provider is replayed in full to a native one', async () => {
      const first = await client.responses.create({ model: 'up-model', input: 'translated turn' });
      assert.match(first.id, /^resp_[0-9a-f]{32}$/);
      await client.responses.create({ model: 'nat-model', input: 'native turn', previous_response_id: first.id });
      const sent = mock.requests.at(-1)!.body;
      assert.equal(sent.previous_response_id, undefined);
      assert.deepEqual(sent.input, [
        { type: 'message', role: 'user', content: 'translated turn' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', annotations: [], logprobs: [], text: 'translated turn' }] },
        { type: 'message', role: 'user', content: 'native turn' },
      ]);
    });

    test('a call\'s extra_content from a translated provider (a signature) is not replayed to a native one', async () => {
      const call = { id: 'call_x', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' }, extra_content: { google: { thought_signature: 's' } } };
      mock.replay = { json: { id: 'chatcmpl-x', object: 'chat.completion', created: 1, model: 'up-model', choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [call] }, finish_reason: 'tool_calls' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } } };
      const tools = [{ type: 'function' as const, name: 'get_weather', parameters: { type: 'object', properties: {} }, strict: false }];
      const first = await client.responses.create({ model: 'up-model', input: 'weather?', tools });
      mock.replay = undefined;
      assert.deepEqual((first.output[0] as any).extra_content, call.extra_content, 'the caller sees it on the function_call item');
      await client.responses.create({ model: 'nat-model', previous_response_id: first.id, input: [{ type: 'function_call_output', call_id: 'call_x', output: '18 C' }] });
      const sent = mock.requests.at(-1)!.body;
      assert.deepEqual(sent.input[1], { type: 'function_call', call_id: 'call_x', name: 'get_weather', arguments: '{"city":"Rome"}' });
      // Nor to an OpenAI-compatible chat upstream on the translated path: only Gemini reads it back.
      await client.responses.create({ model: 'up-model', previous_response_id: first.id, input: [{ type: 'function_call_output', call_id: 'call_x', output: '18 C' }], tools });
      assert.deepEqual(mock.requests.at(-1)!.body.messages[1].tool_calls, [{ id: 'call_x', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } }]);
    });
  });
}
