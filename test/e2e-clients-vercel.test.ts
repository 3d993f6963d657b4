// The Vercel AI SDK's chat-completions provider (createOpenAI().chat), with
// only the base URL changed, against each wire protocol behind the gateway on
// uWS: a forced tool call, a multi-step tool loop, streamText with tools, and
// generateObject with a zod schema.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createOpenAI } from '@ai-sdk/openai';
import { generateObject, generateText, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';
import { PARIS, startClientsGateway, TOOL_RESULT, WEATHER_OBJECT, type ClientsGateway } from './helpers/clients-gateway.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

const input = z.object({ location: z.string() });

describe('Vercel AI SDK over uws', () => {
  let env: ClientsGateway;
  let provider: ReturnType<typeof createOpenAI>;
  before(async () => {
    env = await startClientsGateway('uws');
    provider = createOpenAI({ baseURL: env.baseURL, apiKey: env.key });
  });
  after(async () => { await env.close(); });

  for (const label of ['openai', 'anthropic', 'gemini'] as const) {
    const model = () => provider.chat(env.protocols.find((x) => x.label === label)!.model);

    test(`${label}: generateText with toolChoice required returns the typed call`, async () => {
      const r = await generateText({
        model: model(), maxRetries: 0, prompt: 'Weather in Paris?', toolChoice: 'required',
        tools: { get_weather: tool({ description: 'Current weather', inputSchema: input }) },
      });
      assert.equal(r.finishReason, 'tool-calls');
      assert.equal(r.toolCalls.length, 1);
      const call = r.toolCalls[0]!;
      assert.equal(call.toolName, 'get_weather');
      assert.deepEqual(call.input, PARIS);
      assert.ok(r.usage.inputTokens! > 0, 'usage reached the SDK');
      if (label === 'openai') assert.equal(env.protocols[0]!.mock.requests.at(-1)!.body.tool_choice, 'required');
    });

    test(`${label}: a multi-step tool loop runs the tool and ends with the text after its result`, async () => {
      const seen: unknown[] = [];
      const r = await generateText({
        model: model(), maxRetries: 0, prompt: 'Weather in Paris?', stopWhen: stepCountIs(3),
        tools: {
          get_weather: tool({
            description: 'Current weather', inputSchema: input,
            execute: async (args) => { seen.push(args); return JSON.parse(TOOL_RESULT) as { temperature: number }; },
          }),
        },
      });
      assert.deepEqual(seen, [PARIS], 'the tool ran once, with the parsed arguments');
      assert.equal(r.steps.length, 2);
      assert.equal(r.steps[0]!.finishReason, 'tool-calls');
      assert.deepEqual(r.steps[0]!.toolResults.map((t) => t.output), [{ temperature: 18 }]);
      assert.equal(r.text, `Tool said: ${TOOL_RESULT}`);
      assert.equal(r.finishReason, 'stop');
    });

    test(`${label}: streamText with tools streams the input and emits the call`, async () => {
      const r = streamText({
        model: model(), maxRetries: 0, prompt: 'Weather in Paris?',
        tools: { get_weather: tool({ description: 'Current weather', inputSchema: input }) },
      });
      const types: string[] = [];
      let streamedInput = '';
      let starts = 0;
      const calls: Array<{ toolName: string; input: unknown }> = [];
      for await (const part of r.fullStream) {
        types.push(part.type);
        if (part.type === 'tool-input-start') { starts++; assert.equal(part.toolName, 'get_weather'); }
        if (part.type === 'tool-input-delta') streamedInput += part.delta;
        if (part.type === 'tool-call') calls.push({ toolName: part.toolName, input: part.input });
        if (part.type === 'error') assert.fail(`stream error: ${String((part as { error: unknown }).error)}`);
      }
      assert.equal(starts, 1);
      assert.deepEqual(calls, [{ toolName: 'get_weather', input: PARIS }]);
      assert.deepEqual(JSON.parse(streamedInput), PARIS, 'the input deltas add up to the arguments');
      assert.equal(await r.finishReason, 'tool-calls');
      assert.ok((await r.usage).outputTokens! > 0);
      assert.ok(types.indexOf('tool-input-start') < types.indexOf('tool-call'));
    });

    test(`${label}: generateObject with a zod schema`, async () => {
      // The Gemini mock echoes the prompt; the OpenAI mock builds the same value from the schema; the
      // Anthropic adapter emulates json_schema with one forced tool, which its mock calls with toolArguments.
      const mock = env.protocols.find((x) => x.label === label)!.mock;
      mock.toolArguments = WEATHER_OBJECT;
      const r = await generateObject({
        model: model(), maxRetries: 0, schema: z.object({ city: z.string(), temperature_c: z.number() }),
        prompt: JSON.stringify(WEATHER_OBJECT),
      }).finally(() => { mock.toolArguments = undefined; });
      assert.deepEqual(r.object, WEATHER_OBJECT);
      assert.equal(r.finishReason, 'stop');
      if (label === 'openai') assert.equal(env.protocols[0]!.mock.requests.at(-1)!.body.response_format.type, 'json_schema');
    });
  }
});
