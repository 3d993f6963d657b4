// The official openai SDK, changing only its base URL, against each wire
// protocol behind the gateway: tool calls as JSON and as a stream, the
// stream() helper's tool-call events, a tool loop, and .parse() with zod.
// The Vercel AI SDK and LangChain have their own files beside this one.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { z } from 'zod';
import { HTTP_KINDS } from './helpers/gateway.js';
import { PARIS, startClientsGateway, TOOL_RESULT, WEATHER_OBJECT, type ClientsGateway } from './helpers/clients-gateway.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

const weather: ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather', description: 'Current weather in a city', strict: true,
    parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'], additionalProperties: false },
  },
};
const clock: ChatCompletionTool = {
  type: 'function',
  function: { name: 'get_time', parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] } },
};
const ask: ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }];

for (const http of HTTP_KINDS) {
  describe(`openai SDK over ${http}`, () => {
    let env: ClientsGateway;
    let client: OpenAI;
    before(async () => {
      env = await startClientsGateway(http);
      client = new OpenAI({ baseURL: env.baseURL, apiKey: env.key, maxRetries: 0 });
    });
    after(async () => { await env.close(); });

    for (const label of ['openai', 'anthropic', 'gemini'] as const) {
      const p = () => env.protocols.find((x) => x.label === label)!;

      test(`${label}: create with tools (JSON), then the tool result answered`, async () => {
        const r = await client.chat.completions.create({ model: p().model, messages: ask, tools: [clock, weather], tool_choice: { type: 'function', function: { name: 'get_weather' } } });
        assert.match(r.id, /^chatcmpl_/);
        assert.equal(r.model, p().model);
        const choice = r.choices[0]!;
        assert.equal(choice.finish_reason, 'tool_calls');
        assert.equal(choice.message.content, null);
        assert.equal(choice.message.tool_calls?.length, 1);
        const call = choice.message.tool_calls![0]!;
        assert.ok(call.type === 'function');
        assert.equal(call.function.name, 'get_weather', 'the forced tool, not the first one');
        assert.deepEqual(JSON.parse(call.function.arguments), PARIS);
        assert.ok(call.id.length > 0);

        const messages: ChatCompletionMessageParam[] = [...ask, choice.message, { role: 'tool', tool_call_id: call.id, content: TOOL_RESULT }];
        const second = await client.chat.completions.create({ model: p().model, messages, tools: [clock, weather] });
        assert.equal(second.choices[0]!.message.content, `Tool said: ${TOOL_RESULT}`);
        assert.equal(second.choices[0]!.finish_reason, 'stop');
        assert.ok(second.usage!.total_tokens > 0);
      });

      test(`${label}: create with tools (stream): deltas accumulate into one call`, async () => {
        const stream = await client.chat.completions.create({ model: p().model, messages: ask, tools: [weather], stream: true });
        const calls = new Map<number, { id: string; name: string; arguments: string }>();
        let finish: string | null = null;
        let fragments = 0;
        let last: OpenAI.Chat.Completions.ChatCompletionChunk | undefined;
        for await (const chunk of stream) {
          last = chunk;
          assert.match(chunk.id, /^chatcmpl_/);
          for (const c of chunk.choices) {
            finish = c.finish_reason ?? finish;
            for (const d of c.delta.tool_calls ?? []) {
              const acc = calls.get(d.index) ?? { id: '', name: '', arguments: '' };
              acc.id += d.id ?? '';
              acc.name += d.function?.name ?? '';
              acc.arguments += d.function?.arguments ?? '';
              if (d.function?.arguments) fragments++;
              calls.set(d.index, acc);
            }
          }
        }
        assert.deepEqual([...calls.keys()], [0]);
        const call = calls.get(0)!;
        assert.equal(call.name, 'get_weather');
        assert.ok(call.id.length > 0);
        assert.deepEqual(JSON.parse(call.arguments), PARIS);
        assert.equal(finish, 'tool_calls');
        if (label === 'openai') assert.ok(fragments > 1, 'the mock sent the arguments in fragments; each reached the caller');
        assert.ok(last?.usage && last.usage.completion_tokens > 0, 'usage on the final chunk');
      });

      test(`${label}: the stream() helper emits the tool-call events and a final completion`, async () => {
        const runner = client.chat.completions.stream({ model: p().model, messages: ask, tools: [weather] });
        const deltas: string[] = [];
        const done: Array<{ name: string; arguments: string; parsed: unknown }> = [];
        runner.on('tool_calls.function.arguments.delta', (e) => deltas.push(e.arguments_delta));
        runner.on('tool_calls.function.arguments.done', (e) => done.push({ name: e.name, arguments: e.arguments, parsed: e.parsed_arguments }));
        const final = await runner.finalChatCompletion();
        assert.equal(done.length, 1);
        assert.equal(done[0]!.name, 'get_weather');
        assert.deepEqual(done[0]!.parsed, PARIS, 'a strict tool gets its arguments parsed');
        assert.equal(deltas.join(''), done[0]!.arguments);
        const message = final.choices[0]!.message;
        assert.equal(final.choices[0]!.finish_reason, 'tool_calls');
        const call = message.tool_calls![0]!;
        assert.ok(call.type === 'function');
        assert.equal(call.function.name, 'get_weather');
        assert.deepEqual(call.function.parsed_arguments, PARIS);
      });

      test(`${label}: the stream() helper's final message goes back as the next turn's history, with the SDK's parses on it`, async () => {
        const final = await client.chat.completions.stream({ model: p().model, messages: ask, tools: [weather] }).finalChatCompletion();
        const message = final.choices[0]!.message;
        const call = message.tool_calls![0]!;
        // What the SDK adds to what it hands back: its parse of the content and of the arguments.
        assert.ok('parsed' in message && call.type === 'function' && 'parsed_arguments' in call.function, JSON.stringify(message));
        const second = await client.chat.completions.create({
          model: p().model, messages: [...ask, message, { role: 'tool', tool_call_id: call.id, content: TOOL_RESULT }], tools: [weather],
        });
        assert.equal(second.choices[0]!.message.content, `Tool said: ${TOOL_RESULT}`);
      });

      test(`${label}: .parse() with zodResponseFormat gives the typed object`, async () => {
        const Weather = z.object({ city: z.string(), temperature_c: z.number() });
        // The Gemini mock echoes the prompt; the OpenAI mock builds the same value from the schema; the
        // Anthropic adapter emulates json_schema with one forced tool, which its mock calls with toolArguments.
        p().mock.toolArguments = WEATHER_OBJECT;
        const r = await client.chat.completions.parse({
          model: p().model, messages: [{ role: 'user', content: JSON.stringify(WEATHER_OBJECT) }], response_format: zodResponseFormat(Weather, 'weather'),
        }).finally(() => { p().mock.toolArguments = undefined; });
        const message = r.choices[0]!.message;
        assert.deepEqual(message.parsed, WEATHER_OBJECT);
        assert.equal(message.refusal ?? null, null);
        if (label === 'openai') {
          const sent = p().mock.requests.at(-1)!.body;
          assert.equal(sent.response_format.type, 'json_schema');
          assert.equal(sent.response_format.json_schema.name, 'weather');
        }
      });
    }

    test('openai: n: 2 with tools streams two interleaved calls that both accumulate', async () => {
      const model = env.protocols[0]!.model;
      const final = await client.chat.completions.stream({ model, n: 2, messages: ask, tools: [weather] }).finalChatCompletion();
      assert.deepEqual(final.choices.map((c) => c.index), [0, 1]);
      for (const c of final.choices) {
        assert.equal(c.finish_reason, 'tool_calls');
        const call = c.message.tool_calls![0]!;
        assert.ok(call.type === 'function');
        assert.deepEqual(JSON.parse(call.function.arguments), PARIS);
      }
      assert.notEqual(final.choices[0]!.message.tool_calls![0]!.id, final.choices[1]!.message.tool_calls![0]!.id);
    });
  });
}
