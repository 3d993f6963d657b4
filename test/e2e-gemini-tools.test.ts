// Tool calling, n > 1 and structured output against Gemini through a real
// gateway, with the official openai SDK as the client: the caller speaks
// OpenAI's full chat shape, the mock hears Gemini's documented wire format.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { startGeminiMock, GEMINI_MOCK_KEY, type GeminiMockUpstream } from './mocks/gemini-mock.js';
import { HTTP_KINDS, startGateway, type TestGateway } from './helpers/gateway.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

const MODEL = 'gemini-2.5-flash';
const weather: ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather', description: 'Current weather in a city', strict: true,
    parameters: { type: 'object', properties: { location: { type: 'string' }, unit: { type: ['string', 'null'], enum: ['C', 'F', null] } }, required: ['location', 'unit'], additionalProperties: false },
  },
};

for (const http of HTTP_KINDS) {
  describe(`Gemini tools, n and structured output over ${http}`, () => {
    let gem: GeminiMockUpstream;
    let gw: TestGateway;
    let client: OpenAI;

    before(async () => {
      gem = await startGeminiMock();
      gw = await startGateway({
        http,
        env: { SLUICE_T_GEMINI: GEMINI_MOCK_KEY },
        config: {
          // A deadline shorter than the recorded 429's 30 s RetryInfo: sluice starts no wait that would
          // end past it, so the 429 goes straight back for the caller's SDK to wait out.
          providers: { gemini: { kind: 'gemini', base_url: `${gem.url}/v1beta`, api_key_env: 'SLUICE_T_GEMINI', retry: { deadline_ms: 20_000 } } },
          organizations: [{ id: 'acme', models: [MODEL] }],
        },
      });
      client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: await gw.key('acme'), maxRetries: 0 });
    });
    after(async () => { await gw.close(); await gem.close(); });

    test('a 429 keeps its status and its RetryInfo delay arrives as retry-after, so the SDK waits as told', async () => {
      const fixture = JSON.parse(readFileSync(new URL('../../test/fixtures/gemini/rate-limited.json', import.meta.url), 'utf8'));
      gem.replay = fixture.response;
      const asked = gem.requests.length;
      try {
        const res = await fetch(`${gw.url}/v1/chat/completions`, {
          method: 'POST', headers: { authorization: `Bearer ${(client as any).apiKey}` },
          body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }),
        });
        assert.equal(res.status, 429);
        assert.equal(res.headers.get('retry-after'), '30');
        assert.equal(res.headers.get('retry-after-ms'), '29500');
        const body: any = await res.json();
        assert.equal(body.error.type, 'rate_limit_error');
        assert.equal(body.error.code, 'RESOURCE_EXHAUSTED');
        assert.equal(gem.requests.length - asked, 1, 'a 30 s wait does not fit a 20 s deadline: no retry');
      } finally {
        gem.replay = undefined;
      }
    });

    test('a tool call as JSON, with the schema converted for Gemini', async () => {
      const r = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Weather in Paris?' }], tools: [weather], tool_choice: 'auto' });
      const choice = r.choices[0]!;
      assert.equal(choice.finish_reason, 'tool_calls');
      assert.equal(choice.message.content, null);
      const call = choice.message.tool_calls![0]!;
      assert.equal(call.type, 'function');
      assert.match(call.id, /^call_/);
      assert.deepEqual(call.type === 'function' && call.function, { name: 'get_weather', arguments: '{"location":"Paris"}' });
      const sent = gem.requests.at(-1)!.body;
      assert.deepEqual(sent.tools[0].functionDeclarations[0].parameters,
        { type: 'OBJECT', properties: { location: { type: 'STRING' }, unit: { type: 'STRING', enum: ['C', 'F'], nullable: true } }, required: ['location', 'unit'] });
      assert.deepEqual(sent.toolConfig, { functionCallingConfig: { mode: 'AUTO' } });
    });

    test('a tool call streamed: one delta with id and name, then tool_calls and usage', async () => {
      const stream = await client.chat.completions.create({ model: MODEL, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Weather?' }], tools: [weather] });
      const calls: any[] = [];
      let finish: string | null = null;
      let usage: any;
      for await (const c of stream) {
        for (const ch of c.choices) { calls.push(...(ch.delta.tool_calls ?? [])); finish = ch.finish_reason ?? finish; }
        if (c.usage) usage = c.usage;
      }
      assert.equal(calls.length, 1);
      assert.equal(calls[0].index, 0);
      assert.match(calls[0].id, /^call_/);
      assert.deepEqual(calls[0].function, { name: 'get_weather', arguments: '{"location":"Paris"}' });
      assert.equal(finish, 'tool_calls');
      assert.ok(usage.completion_tokens > 0);
    });

    test('a two-step tool loop: the result is matched to its call by tool_call_id', async () => {
      const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
      const first = await client.chat.completions.create({ model: MODEL, messages, tools: [weather] });
      const assistant = first.choices[0]!.message;
      const call = assistant.tool_calls![0]!;
      messages.push(assistant, { role: 'tool', tool_call_id: call.id, content: JSON.stringify({ temp: 21, sky: 'clear' }) });
      const second = await client.chat.completions.create({ model: MODEL, messages, tools: [weather] });
      assert.equal(second.choices[0]!.message.content, 'Tool said: {"temp":21,"sky":"clear"}');
      assert.equal(second.choices[0]!.finish_reason, 'stop');
      const contents = gem.requests.at(-1)!.body.contents;
      assert.deepEqual(contents.map((c: any) => c.role), ['user', 'model', 'user']);
      assert.deepEqual(contents[1].parts, [{ functionCall: { name: 'get_weather', args: { location: 'Paris' } } }]);
      assert.deepEqual(contents[2].parts, [{ functionResponse: { name: 'get_weather', response: { temp: 21, sky: 'clear' } } }]);

      // A result whose id matches no call is refused before Gemini is asked.
      const before = gem.requests.length;
      await assert.rejects(client.chat.completions.create({ model: MODEL, messages: [...messages.slice(0, 2), { role: 'tool', tool_call_id: 'call_unknown', content: 'x' }], tools: [weather] }),
        (e: any) => e.status === 400 && e.param === 'messages.2.tool_call_id');
      assert.equal(gem.requests.length, before);
    });

    test('parallel calls with Gemini\'s ids: each result goes back with its call\'s id, in call order, whatever order the caller answers in', async () => {
      gem.replay = { status: 200, json: {
        candidates: [{ index: 0, finishReason: 'STOP', content: { role: 'model', parts: [
          { functionCall: { id: 'fc-1', name: 'get_weather', args: { location: 'Paris' } }, thoughtSignature: 'SIG1' },
          { functionCall: { id: 'fc-2', name: 'get_weather', args: { location: 'Rome' } } },
        ] } }],
        usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 6, totalTokenCount: 11 },
      } };
      const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Paris and Rome?' }];
      let assistant;
      try {
        assistant = (await client.chat.completions.create({ model: MODEL, messages, tools: [weather] })).choices[0]!.message;
      } finally {
        gem.replay = undefined;
      }
      assert.deepEqual(assistant.tool_calls!.map((c) => c.id), ['fc-1', 'fc-2']);
      // Rome's result comes back first, as a caller running both at once may send it.
      messages.push(assistant, { role: 'tool', tool_call_id: 'fc-2', content: 'rainy' }, { role: 'tool', tool_call_id: 'fc-1', content: 'sunny' });
      await client.chat.completions.create({ model: MODEL, messages, tools: [weather] });
      const contents = gem.requests.at(-1)!.body.contents;
      assert.deepEqual(contents[1].parts, [
        { functionCall: { id: 'fc-1', name: 'get_weather', args: { location: 'Paris' } }, thoughtSignature: 'SIG1' },
        { functionCall: { id: 'fc-2', name: 'get_weather', args: { location: 'Rome' } } },
      ]);
      assert.deepEqual(contents[2].parts, [
        { functionResponse: { id: 'fc-1', name: 'get_weather', response: { content: 'sunny' } } },
        { functionResponse: { id: 'fc-2', name: 'get_weather', response: { content: 'rainy' } } },
      ]);
    });

    test('n: 2 gives two choices, JSON and stream', async () => {
      const r = await client.chat.completions.create({ model: MODEL, n: 2, messages: [{ role: 'user', content: 'two of these' }] });
      assert.deepEqual(r.choices.map((c) => [c.index, c.message.content, c.finish_reason]), [[0, 'two of these', 'stop'], [1, 'two of these', 'stop']]);
      assert.equal(gem.requests.at(-1)!.body.generationConfig.candidateCount, 2);
      const stream = await client.chat.completions.create({ model: MODEL, n: 2, stream: true, messages: [{ role: 'user', content: 'two of these' }] });
      const text = ['', ''];
      const finishes: string[] = [];
      for await (const c of stream) for (const ch of c.choices) { text[ch.index] += ch.delta.content ?? ''; if (ch.finish_reason) finishes.push(ch.finish_reason); }
      assert.deepEqual(text, ['two of these', 'two of these']);
      assert.deepEqual(finishes, ['stop', 'stop']);
    });

    test('json_schema response_format through .parse() with zod', async () => {
      const Weather = z.object({ city: z.string(), temp: z.number(), tags: z.array(z.string()), note: z.string().nullable() });
      // The mock echoes the prompt, so the prompt is the JSON the schema describes.
      const answer = { city: 'Paris', temp: 21.5, tags: ['sunny'], note: null };
      const r = await client.chat.completions.parse({ model: MODEL, messages: [{ role: 'user', content: JSON.stringify(answer) }], response_format: zodResponseFormat(Weather, 'weather') });
      assert.deepEqual(r.choices[0]!.message.parsed, answer);
      const config = gem.requests.at(-1)!.body.generationConfig;
      assert.equal(config.responseMimeType, 'application/json');
      assert.deepEqual(config.responseSchema.propertyOrdering, ['city', 'temp', 'tags', 'note']);
      assert.deepEqual(config.responseSchema.properties.note, { type: 'STRING', nullable: true });
    });

    test('a schema keyword Gemini cannot express is a 400 naming its path', async () => {
      const before = gem.requests.length;
      const tool: ChatCompletionTool = { type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { x: { type: 'object', patternProperties: { '^a': { type: 'string' } } } } } } };
      await assert.rejects(client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], tools: [tool] }), (e: any) => {
        assert.equal(e.status, 400);
        assert.equal(e.param, 'tools.0.function.parameters.properties.x.patternProperties');
        assert.equal(e.code, 'invalid_request');
        assert.match(e.message, /Gemini/);
        return true;
      });
      await assert.rejects(client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], tools: [weather], parallel_tool_calls: false }),
        (e: any) => e.status === 400 && e.param === 'parallel_tool_calls');
      assert.equal(gem.requests.length, before, 'nothing reached Gemini');
    });
  });
}
