// The Responses API with real clients on every wire protocol: the Vercel AI
// SDK's default provider (`createOpenAI(...)(model)` calls POST /v1/responses)
// and the openai SDK's `responses.create`, against the OpenAI-compatible,
// Anthropic and Gemini mocks, each of which calls the offered tool and then
// answers the tool's result as `Tool said: …`.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { z } from 'zod';
import { startClientsGateway, type ClientsGateway } from './helpers/clients-gateway.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

describe('Responses API clients on every provider', () => {
  let cg: ClientsGateway;
  before(async () => { cg = await startClientsGateway('uws'); });
  after(() => cg.close());

  const weather = () => tool({
    description: 'Current weather in a city',
    inputSchema: z.object({ location: z.string() }),
    execute: async ({ location }) => `sunny in ${location}`,
  });

  for (const label of ['openai', 'anthropic', 'gemini'] as const) {
    test(`${label}: AI SDK generateText runs a two-step tool loop through /v1/responses`, async () => {
      const p = cg.protocols.find((x) => x.label === label)!;
      const provider = createOpenAI({ baseURL: cg.baseURL, apiKey: cg.key });
      const before = p.mock.requests.length;
      const result = await generateText({ model: provider(p.model), prompt: 'Weather in Paris?', tools: { get_weather: weather() }, stopWhen: stepCountIs(3) });
      assert.equal(result.steps.length, 2);
      const call = result.steps[0]!.toolCalls[0]!;
      assert.equal(call.toolName, 'get_weather');
      assert.deepEqual(call.input, { location: 'Paris' });
      assert.match(result.text, /Tool said: .*sunny in Paris/);
      assert.equal(p.mock.requests.length - before, 2, `both steps reached the ${label} upstream in its own wire format`);
    });

    test(`${label}: AI SDK streamText streams the answer through /v1/responses`, async () => {
      const p = cg.protocols.find((x) => x.label === label)!;
      const provider = createOpenAI({ baseURL: cg.baseURL, apiKey: cg.key });
      const result = streamText({ model: provider(p.model), prompt: 'echo these words back' });
      let text = '';
      for await (const delta of result.textStream) text += delta;
      assert.equal(text, 'echo these words back');
      assert.equal(await result.finishReason, 'stop');
    });

    test(`${label}: openai SDK responses.create with a function tool, then the result through previous_response_id`, async () => {
      const p = cg.protocols.find((x) => x.label === label)!;
      const client = new OpenAI({ baseURL: cg.baseURL, apiKey: cg.key, maxRetries: 0 });
      const tools = [{ type: 'function' as const, name: 'get_weather', description: 'Weather', strict: false, parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] } }];
      const first = await client.responses.create({ model: p.model, input: 'Weather in Paris?', tools });
      const call = first.output.find((o) => o.type === 'function_call');
      assert.ok(call && call.type === 'function_call');
      assert.equal(call.name, 'get_weather');
      assert.deepEqual(JSON.parse(call.arguments), { location: 'Paris' });
      const second = await client.responses.create({
        model: p.model, previous_response_id: first.id, tools,
        input: [{ type: 'function_call_output', call_id: call.call_id, output: 'sunny' }],
      });
      assert.match(second.output_text, /Tool said: .*sunny/);
    });
  }
});
