// The Responses API end to end with the official openai SDK: the translated
// path (an OpenAI-compatible chat upstream without a Responses API, and the
// demo mock-echo), routing (auto, rule aliases, explicit ids), the dry run,
// 401 for bad keys, conversation state through previous_response_id,
// retrieve and delete, and another organisation's id.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { z } from 'zod';
import { zodTextFormat } from 'openai/helpers/zod';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import { HTTP_KINDS, startGateway, type TestGateway } from './helpers/gateway.js';
import { oneUpstreamConfig, UPSTREAM_KEY_ENV } from './helpers/fixtures.js';
import { stopTestPostgres } from './helpers/pg.js';
import { loadOpenAIFixtures, upstreamChunks } from './helpers/openai-fixtures.js';
import { call } from './helpers/management.js';
import { createKey, revokeKey } from '../src/store/api-keys-repo.js';

after(stopTestPostgres);

const base = { id: 'chatcmpl-up', object: 'chat.completion', created: 1_700_000_000, model: 'up-model' };
const usage = { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 };

for (const http of HTTP_KINDS) {
  describe(`responses API (translated) over ${http}`, () => {
    let mock: OpenAIMock;
    let gw: TestGateway;
    let client: OpenAI;
    let other: OpenAI;

    before(async () => {
      mock = await startOpenAIMock();
      gw = await startGateway({ http, config: oneUpstreamConfig(mock.url), env: { [UPSTREAM_KEY_ENV]: OPENAI_MOCK_KEY } });
      acmeKey = await gw.key('acme');
      client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: acmeKey, maxRetries: 0 });
      other = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: await gw.key('beta'), maxRetries: 0 });
    });
    after(async () => { await gw.close(); await mock.close(); });

    let acmeKey: string;
    /** `key` null: no authorization header. */
    const post = (body: object, headers: Record<string, string> = {}, key: string | null = acmeKey) =>
      call(gw.url, key ?? undefined, 'POST', '/v1/responses', body, headers);

    test('routing: auto picks by size, a rule alias is pinned (route_reason rule:<name>), an explicit id bypasses rules', async () => {
      mock.replay = undefined;
      const trace = { 'gateway-trace': 'true' };
      const short = await post({ model: 'auto', input: 'hi' }, trace);
      assert.equal(short.status, 200, short.text);
      assert.equal(short.body.model, 'up-small', 'the cheapest model that fits');
      assert.equal(short.body.gateway.route_reason, 'default');
      assert.equal(mock.requests.at(-1)!.body.model, 'up-small');
      const long = await post({ model: 'auto', input: 'word '.repeat(100) }, trace);
      assert.equal(long.body.model, 'up-model', 'up-small\'s context window cannot hold it');
      assert.equal(mock.requests.at(-1)!.body.model, 'up-model');

      const rule = async (name: string, requested: string, model: string) => {
        const r = await call(gw.url, acmeKey, 'POST', '/v1/routes', { name, action_kind: 'pin', match: { requested_model: requested }, action: { provider: 'up', model } });
        assert.equal(r.status, 201, r.text);
        return r.body.id as string;
      };
      const ids = [await rule('resp-team', 'team-model', 'up-model'), await rule('resp-bypass', 'up-small', 'up-model')];
      try {
        const pinned = await post({ model: 'team-model', input: 'pinned please', stream: false }, trace);
        assert.equal(pinned.status, 200, pinned.text);
        assert.equal(pinned.body.model, 'up-model');
        assert.equal(pinned.body.gateway.route_reason, 'rule:resp-team');
        assert.equal(mock.requests.at(-1)!.body.model, 'up-model');
        const t = await gw.traces.waitFor(pinned.headers.get('x-request-id')!);
        assert.equal(t.route_reason, 'rule:resp-team');
        assert.equal(t.requested_model, 'team-model');
        assert.equal(t.model, 'up-model');
        // Streamed, the block rides on response.completed.
        const s = client.responses.stream({ model: 'team-model', input: 'streamed' }, { headers: trace });
        for await (const _ of s) { /* drain */ }
        const final: any = await s.finalResponse();
        assert.equal(final.model, 'up-model');
        assert.equal(final.gateway.route_reason, 'rule:resp-team');

        const explicit = await post({ model: 'up-small', input: 'explicit' }, trace);
        assert.equal(explicit.body.model, 'up-small', 'a rule naming a model id does not apply to it');
        assert.equal(explicit.body.gateway.route_reason, 'default');
        assert.equal(mock.requests.at(-1)!.body.model, 'up-small');
      } finally {
        for (const id of ids) assert.equal((await call(gw.url, acmeKey, 'DELETE', `/v1/routes/${id}`)).status, 204);
      }
    });

    test('the prompt estimate counts the conversation behind previous_response_id: auto skips a model too small for it', async () => {
      mock.replay = undefined;
      const first = await client.responses.create({ model: 'up-model', input: 'word '.repeat(60) });
      const next = { model: 'auto', input: 'go on', previous_response_id: first.id };
      const dry = await post(next, { 'gateway-dry-run': 'true' });
      assert.equal(dry.status, 200, dry.text);
      assert.ok(dry.body.estimated_prompt_tokens > 150, `two turns of 300 characters: ${dry.body.estimated_prompt_tokens}`);
      assert.equal(dry.body.model, 'up-model');
      assert.ok(dry.body.candidates.some((c: any) => c.model === 'up-small' && !c.fits), 'up-small cannot hold the conversation');
      const r = await post(next, { 'gateway-trace': 'true' });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.model, 'up-model');
      assert.equal(mock.requests.at(-1)!.body.model, 'up-model');
      assert.equal(mock.requests.at(-1)!.body.messages.length, 3, 'the whole conversation went upstream');
      // Without the conversation the same input fits the small model.
      assert.equal((await post({ model: 'auto', input: 'go on' }, { 'gateway-dry-run': 'true' })).body.model, 'up-small');
    });

    test('Gateway-Dry-Run: the resolution as JSON, and the upstream receives nothing', async () => {
      const before = mock.requests.length;
      for (const body of [{ model: 'up-alias', input: 'x'.repeat(400) }, { model: 'auto', input: 'hi', stream: true, max_output_tokens: 20, instructions: 'Be brief.' }]) {
        const r = await post(body, { 'gateway-dry-run': 'true' });
        assert.equal(r.status, 200, r.text);
        assert.match(r.headers.get('content-type')!, /application\/json/);
        assert.equal(r.body.object, 'route.resolution');
        assert.equal(r.body.requested_model, body.model);
        assert.equal(r.body.provider, 'up');
        assert.equal(r.body.model, body.model === 'auto' ? 'up-small' : 'up-model');
        assert.equal(r.body.route_reason, 'default');
        assert.ok(r.body.estimated_prompt_tokens > 0);
        assert.ok(r.body.estimated_cost_usd > 0);
        if ('max_output_tokens' in body) assert.equal(r.body.estimated_completion_tokens, 20);
        const t = await gw.traces.waitFor(r.headers.get('x-request-id')!);
        assert.equal(t.dry_run, true);
        assert.equal(t.endpoint, 'responses');
      }
      await new Promise((ok) => setTimeout(ok, 100));
      assert.equal(mock.requests.length, before, 'no upstream request for a dry run');
      const off = await post({ model: 'up-model', input: 'real' }, { 'gateway-dry-run': 'false' });
      assert.equal(off.body.object, 'response', 'Gateway-Dry-Run: false calls the upstream');
      assert.equal(mock.requests.length, before + 1);
    });

    test('a missing, unknown or revoked key is 401 unauthorized in JSON, before any upstream call', async () => {
      const before = mock.requests.length;
      const expect401 = (r: Awaited<ReturnType<typeof post>>, label: string) => {
        assert.equal(r.status, 401, `${label}: ${r.text}`);
        assert.equal(r.body.error.code, 'unauthorized', label);
        assert.equal(r.body.error.type, 'authentication_error', label);
        assert.match(r.body.request_id, /^req_/, label);
      };
      for (const key of [null, 'sk-sluice-unknown']) {
        expect401(await post({ model: 'up-model', input: 'x' }, {}, key), `create ${key}`);
        expect401(await call(gw.url, key ?? undefined, 'GET', '/v1/responses/resp_x'), `get ${key}`);
        expect401(await call(gw.url, key ?? undefined, 'DELETE', '/v1/responses/resp_x'), `delete ${key}`);
      }
      assert.equal(mock.requests.length, before, 'nothing reached the upstream');
      const k = await createKey(gw.app.services.pool, 'acme', 'doomed', 'user');
      assert.equal((await post({ model: 'up-model', input: 'x' }, {}, k.key)).status, 200);
      assert.ok(await revokeKey(gw.app.services.pool, k.id));
      const revokedAt = Date.now();
      for (;;) {
        const n = mock.requests.length;
        const r = await post({ model: 'up-model', input: 'x' }, {}, k.key);
        if (r.status === 401) { expect401(r, 'revoked'); assert.equal(mock.requests.length, n); break; }
        assert.ok(Date.now() - revokedAt < 2_000, 'revocation must take effect within the cache TTL');
        await new Promise((ok) => setTimeout(ok, 50));
      }
      const sdk = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: k.key, maxRetries: 0 });
      await assert.rejects(sdk.responses.create({ model: 'up-model', input: 'x' }), OpenAI.AuthenticationError);
    });

    test('a chat model\'s url citations become the output text\'s annotations, JSON and stream (annotation.added)', async () => {
      const fixtures = loadOpenAIFixtures();
      const citation = (f: string) => {
        const t = fixtures.find((x) => x.name === f)!.response;
        const raw = t.json ? (t.json as any).choices[0].message.annotations[0] : upstreamChunks(t).flatMap((c: any) => c.choices?.[0]?.delta?.annotations ?? [])[0];
        return { type: 'url_citation', ...raw.url_citation };
      };
      try {
        mock.replay = fixtures.find((x) => x.name === 'annotations')!.response;
        const r = await client.responses.create({ model: 'up-model', input: 'swim in the Seine?' });
        assert.deepEqual((r.output[0] as any).content[0].annotations, [citation('annotations')]);
        mock.replay = fixtures.find((x) => x.name === 'annotations-stream')!.response;
        const s = client.responses.stream({ model: 'up-model', input: 'swim in the Seine?' });
        const added: unknown[] = [];
        s.on('response.output_text.annotation.added', (e) => added.push(e.annotation));
        for await (const _ of s) { /* drain */ }
        const final = await s.finalResponse();
        assert.deepEqual(added, [citation('annotations-stream')]);
        assert.deepEqual((final.output[0] as any).content[0].annotations, added);
      } finally { mock.replay = undefined; }
    });

    test('string input: a response object with output_text, usage and the request settings echoed', async () => {
      mock.replay = undefined;
      const { data, response } = await client.responses.create({ model: 'up-model', input: 'hello sluice', instructions: 'Be brief.', temperature: 0.5 }).withResponse();
      assert.match(data.id, /^resp_/);
      assert.equal(data.object, 'response');
      assert.equal(data.status, 'completed');
      assert.equal(data.model, 'up-model');
      assert.equal(data.output_text, 'hello sluice');
      const msg = data.output[0] as any;
      assert.equal(msg.type, 'message');
      assert.equal(msg.role, 'assistant');
      assert.deepEqual(msg.content[0].annotations, []);
      assert.equal(data.instructions, 'Be brief.');
      assert.equal(data.temperature, 0.5);
      assert.equal((data as any).store, true);
      assert.ok(data.usage!.input_tokens > 0 && data.usage!.total_tokens === data.usage!.input_tokens + data.usage!.output_tokens);
      assert.equal(data.usage!.input_tokens_details.cached_tokens, 0);
      assert.equal(data.id.slice(5), response.headers.get('x-request-id')!.slice(4));
      const sent = mock.requests.at(-1)!.body;
      assert.deepEqual(sent.messages, [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hello sluice' }]);
      assert.equal(sent.temperature, 0.5);
      const trace = await gw.traces.waitFor(response.headers.get('x-request-id')!);
      assert.equal(trace.endpoint, 'responses');
      assert.equal(trace.provider, 'up');
      assert.equal(trace.prompt_tokens, data.usage!.input_tokens);
    });

    test('item list input with output_text assistant turns, and retrieve / delete, and another org gets 404', async () => {
      const r = await client.responses.create({
        model: 'up-model',
        input: [
          { role: 'user', content: [{ type: 'input_text', text: 'first' }] },
          { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'ok', annotations: [] }] } as any,
          { role: 'user', content: 'second turn' },
        ],
      });
      assert.equal(r.output_text, 'second turn');
      const sent = mock.requests.at(-1)!.body.messages;
      assert.deepEqual(sent.map((m: any) => [m.role, m.content]), [['user', 'first'], ['assistant', 'ok'], ['user', 'second turn']]);
      const got = await client.responses.retrieve(r.id);
      assert.equal(got.id, r.id);
      assert.equal(got.output_text, 'second turn');
      await assert.rejects(other.responses.retrieve(r.id), (e: any) => e.status === 404 && e.code === 'not_found');
      await assert.rejects(other.responses.delete(r.id), (e: any) => e.status === 404);
      await client.responses.delete(r.id);
      await assert.rejects(client.responses.retrieve(r.id), (e: any) => e.status === 404);
    });

    /** 25 input items: messages with string and part content (one with its own id), a call and its output. */
    const twentyFive = (): any[] => {
      const items: any[] = [];
      for (let i = 0; i < 22; i++) items.push({ role: i % 2 ? 'assistant' : 'user', content: `turn ${i}` });
      items[3] = { type: 'message', id: 'msg_callers_own', role: 'assistant', content: [{ type: 'output_text', text: 'turn 3', annotations: [] }] };
      items.push({ type: 'function_call', call_id: 'call_1', name: 'lookup', arguments: '{}' });
      items.push({ type: 'function_call_output', call_id: 'call_1', output: 'found' });
      items.push({ role: 'user', content: [{ type: 'input_text', text: 'last' }] });
      return items;
    };

    test('input_items: the openai SDK pages 25 items by limit, order and after, auto-pagination included; every item has a stable id, in OpenAI\'s shape', async () => {
      const r = await client.responses.create({ model: 'up-model', input: twentyFive() });
      const list = (q: object) => client.responses.inputItems.list(r.id, q);
      const first = await list({ limit: 10, order: 'asc' });
      assert.equal(first.data.length, 10);
      assert.equal(first.has_more, true);
      assert.deepEqual(first.data[0], { id: first.data[0]!.id, type: 'message', role: 'user', content: [{ type: 'input_text', text: 'turn 0' }], status: 'completed' });
      assert.match(first.data[0]!.id!, /^msg_[0-9a-f]{48}$/);
      assert.deepEqual(first.data[1], { id: first.data[1]!.id, type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'turn 1', annotations: [] }], status: 'completed' });
      assert.equal(first.data[3]!.id, 'msg_callers_own', 'an id the caller sent is kept');

      const asc: any[] = [];
      for await (const it of list({ limit: 10, order: 'asc' })) asc.push(it);
      assert.equal(asc.length, 25);
      assert.deepEqual(asc.slice(0, 10), first.data, 'the same ids on every call');
      assert.equal(new Set(asc.map((it) => it.id)).size, 25);
      const texts = asc.map((it) => it.content?.[0]?.text ?? it.type);
      assert.deepEqual(texts, [...Array.from({ length: 22 }, (_, i) => `turn ${i}`), 'function_call', 'function_call_output', 'last']);
      assert.match(asc[22].id, /^fc_[0-9a-f]{48}$/);
      assert.equal(asc[22].status, 'completed');
      assert.match(asc[23].id, /^fco_[0-9a-f]{48}$/);
      assert.deepEqual(asc[23], { id: asc[23].id, type: 'function_call_output', call_id: 'call_1', output: 'found', status: 'completed' });

      const desc: any[] = [];
      for await (const it of list({ limit: 7 })) desc.push(it);
      assert.deepEqual(desc, [...asc].reverse(), 'newest first by default');

      const after = await list({ order: 'asc', after: asc[4].id, limit: 3 });
      assert.deepEqual(after.data.map((it) => it.id), asc.slice(5, 8).map((it) => it.id));
      assert.equal(after.has_more, true);
      const tail = await list({ order: 'asc', after: asc[21].id, limit: 3 });
      assert.deepEqual(tail.data.map((it) => it.id), asc.slice(22).map((it) => it.id));
      assert.equal(tail.has_more, false, 'exactly the last three');

      const raw = await call(gw.url, acmeKey, 'GET', `/v1/responses/${r.id}/input_items`);
      assert.equal(raw.status, 200);
      assert.equal(raw.body.object, 'list');
      assert.deepEqual(raw.body.data.map((it: any) => it.id), desc.slice(0, 20).map((it) => it.id), 'limit 20 by default');
      assert.equal(raw.body.first_id, desc[0].id);
      assert.equal(raw.body.last_id, desc[19].id);
      assert.equal(raw.body.has_more, true);
    });

    test('input_items: a bad limit or order, or an after that names no item, is 400 naming it; include is accepted', async () => {
      const r = await client.responses.create({ model: 'up-model', input: 'one item' });
      const get = (q: string) => call(gw.url, acmeKey, 'GET', `/v1/responses/${r.id}/input_items?${q}`);
      for (const [q, param] of [['limit=0', 'limit'], ['limit=101', 'limit'], ['limit=1.5', 'limit'], ['limit=ten', 'limit'], ['limit=', 'limit'],
        ['order=newest', 'order'], ['after=msg_nope', 'after']] as const) {
        const res = await get(q);
        assert.equal(res.status, 400, q);
        assert.equal(res.body.error.code, 'invalid_request', q);
        assert.equal(res.body.error.param, param, q);
      }
      const ok = await get('limit=100&order=asc&include[]=message.input_image.image_url');
      assert.equal(ok.status, 200);
      assert.deepEqual(ok.body.data.map((it: any) => it.content), [[{ type: 'input_text', text: 'one item' }]]);
      assert.equal(ok.body.has_more, false);
      assert.equal((await get('limit=1&after=nothing_here')).body.error.param, 'after');
      await assert.rejects(other.responses.inputItems.list(r.id), (e: any) => e.status === 404);
    });

    test('text Postgres jsonb cannot hold (NUL, a lone surrogate) is stored, retrieved and continued unchanged', async () => {
      const text = 'nul \u0000 and a lone \ud800 end';
      const r = await client.responses.create({ model: 'up-model', input: text });
      assert.equal(r.output_text, text);
      const got = await client.responses.retrieve(r.id);
      assert.equal(got.output_text, text);
      await client.responses.create({ model: 'up-model', input: 'next', previous_response_id: r.id });
      const sent = mock.requests.at(-1)!.body.messages;
      assert.deepEqual(sent.map((m: any) => [m.role, m.content]), [['user', text], ['assistant', text], ['user', 'next']]);
    });

    test('stream: typed events in order with sequence numbers, finalResponse()', async () => {
      mock.replay = undefined;
      const stream = client.responses.stream({ model: 'up-model', input: 'one two three' });
      const types: string[] = [];
      const seqs: number[] = [];
      let text = '';
      for await (const ev of stream) {
        types.push(ev.type);
        seqs.push(ev.sequence_number);
        if (ev.type === 'response.output_text.delta') text += ev.delta;
      }
      const final = await stream.finalResponse();
      assert.equal(text, 'one two three');
      assert.equal(final.output_text, 'one two three');
      assert.equal(final.status, 'completed');
      assert.ok(final.usage!.total_tokens > 0);
      assert.deepEqual(seqs, seqs.map((_, i) => i));
      const distinct = types.filter((t, i) => t !== types[i - 1]);
      assert.deepEqual(distinct, [
        'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added',
        'response.output_text.delta', 'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed',
      ]);
    });

    test('function calling, then a second turn through previous_response_id', async () => {
      mock.replay = { json: { ...base, choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id: 'call_abc', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] }, finish_reason: 'tool_calls' }], usage } };
      const tools: OpenAI.Responses.Tool[] = [{ type: 'function', name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }, strict: true }];
      const first = await client.responses.create({ model: 'up-model', input: 'Weather in Paris?', tools });
      const call = first.output[0] as OpenAI.Responses.ResponseFunctionToolCall;
      assert.equal(call.type, 'function_call');
      assert.equal(call.call_id, 'call_abc');
      assert.equal(call.name, 'get_weather');
      assert.equal(call.arguments, '{"city":"Paris"}');
      assert.match(call.id!, /^fc_/);
      assert.deepEqual(mock.requests.at(-1)!.body.tools, [{ type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: tools[0]!.type === 'function' ? tools[0]!.parameters : {}, strict: true } }]);
      mock.replay = { json: { ...base, choices: [{ index: 0, message: { role: 'assistant', content: 'Sunny, 21C' }, finish_reason: 'stop' }], usage } };
      const second = await client.responses.create({
        model: 'up-model', previous_response_id: first.id, tools,
        input: [{ type: 'function_call_output', call_id: 'call_abc', output: '{"temp":21}' }],
      });
      assert.equal(second.output_text, 'Sunny, 21C');
      assert.equal(second.previous_response_id, first.id);
      const sent = mock.requests.at(-1)!.body.messages;
      assert.deepEqual(sent, [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_abc', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', tool_call_id: 'call_abc', content: '{"temp":21}' },
      ]);
      await assert.rejects(other.responses.create({ model: 'mock-echo', input: 'x', previous_response_id: first.id }), (e: any) => e.status === 404 && e.param === 'previous_response_id');
    });

    test('responses.parse with a zod schema: text.format becomes response_format', async () => {
      mock.replay = { json: { ...base, choices: [{ index: 0, message: { role: 'assistant', content: '{"name":"Ada","age":36}' }, finish_reason: 'stop' }], usage } };
      const Person = z.object({ name: z.string(), age: z.number() });
      const r = await client.responses.parse({ model: 'up-model', input: 'Who?', text: { format: zodTextFormat(Person, 'person') } });
      assert.deepEqual(r.output_parsed, { name: 'Ada', age: 36 });
      const rf = mock.requests.at(-1)!.body.response_format;
      assert.equal(rf.type, 'json_schema');
      assert.equal(rf.json_schema.name, 'person');
      assert.equal(rf.json_schema.strict, true);
      assert.equal(rf.json_schema.schema.type, 'object');
    });

    test('what cannot be translated is a 400 naming it; store:false stores nothing', async () => {
      mock.replay = undefined;
      await assert.rejects(client.responses.create({ model: 'up-model', input: 'x', tools: [{ type: 'web_search' } as any] }), (e: any) => e.status === 400 && e.param === 'tools.0.type');
      await assert.rejects(client.responses.create({ model: 'up-model', input: 'x', prompt: { id: 'pmpt_1' } } as any), (e: any) => e.status === 400 && e.param === 'prompt');
      // A member inside an item or a tool, too: it was dropped before.
      const sent = mock.requests.length;
      await assert.rejects(client.responses.create({ model: 'up-model', input: [{ role: 'user', content: [{ type: 'input_text', text: 'x', cache_control: { type: 'ephemeral' } }] }] } as any), (e: any) => e.status === 400 && e.param === 'input.0.content.0.cache_control' && /no chat equivalent/.test(e.message));
      await assert.rejects(client.responses.create({ model: 'up-model', input: 'x', tools: [{ type: 'function', name: 'f', parameters: {}, strict: false, defer_loading: true }] } as any), (e: any) => e.status === 400 && e.param === 'tools.0.defer_loading');
      assert.equal(mock.requests.length, sent);
      const r = await client.responses.create({ model: 'up-model', input: 'ephemeral', store: false, prompt_cache_key: 'k' });
      assert.equal((r as any).store, false);
      await new Promise((ok) => setTimeout(ok, 100));
      const rows = await gw.app.services.pool.query('SELECT id FROM responses WHERE id = $1', [r.id]);
      assert.equal(rows.rowCount, 0);
      await assert.rejects(client.responses.retrieve(r.id), (e: any) => e.status === 404);
    });

    test('item_reference names a stored item of this organisation only', async () => {
      mock.replay = undefined;
      const first = await client.responses.create({ model: 'up-model', input: 'referenced answer' });
      const ref = { type: 'item_reference', id: first.output[0]!.id } as any;
      await client.responses.create({ model: 'up-model', input: [ref, { role: 'user', content: 'go on' }] });
      assert.deepEqual(mock.requests.at(-1)!.body.messages, [{ role: 'assistant', content: 'referenced answer' }, { role: 'user', content: 'go on' }]);
      await assert.rejects(other.responses.create({ model: 'mock-echo', input: [ref] }), (e: any) => e.status === 404 && e.param === 'input.0.id');
      // A reference that names nothing is malformed, not missing.
      for (const bad of [{ type: 'item_reference' }, { type: 'item_reference', id: 7 }, { type: 'item_reference', id: '' }]) {
        await assert.rejects(client.responses.create({ model: 'up-model', input: [{ role: 'user', content: 'hi' }, bad] as any }), (e: any) => e.status === 400 && e.param === 'input.1.id');
      }
    });

    test('the demo mock-echo answers through the translated path, JSON and stream', async () => {
      const r = await other.responses.create({ model: 'mock-echo', input: 'echo me' });
      assert.equal(r.output_text, 'echo me');
      const s = other.responses.stream({ model: 'mock-echo', input: 'stream me please' });
      for await (const _ of s) { /* drain */ }
      assert.equal((await s.finalResponse()).output_text, 'stream me please');
    });
  });
}
