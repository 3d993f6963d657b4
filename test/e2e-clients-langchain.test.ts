// LangChain's ChatOpenAI, with only configuration.baseURL changed, against
// each wire protocol behind the gateway on uWS: bindTools + invoke parses the
// tool call, stream yields tool_call_chunks that concatenate into it, and the
// tool result comes back as the next answer.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ChatOpenAI } from '@langchain/openai';
import { AIMessageChunk, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { PARIS, startClientsGateway, TOOL_RESULT, type ClientsGateway } from './helpers/clients-gateway.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

const weather = {
  type: 'function' as const,
  function: {
    name: 'get_weather', description: 'Current weather in a city',
    parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
  },
};

describe('LangChain ChatOpenAI over uws', () => {
  let env: ClientsGateway;
  before(async () => { env = await startClientsGateway('uws'); });
  after(async () => { await env.close(); });

  for (const label of ['openai', 'anthropic', 'gemini'] as const) {
    const chat = () => new ChatOpenAI({
      model: env.protocols.find((x) => x.label === label)!.model, apiKey: env.key, maxRetries: 0, configuration: { baseURL: env.baseURL },
    }).bindTools([weather]);

    test(`${label}: bindTools + invoke parses the tool call; the tool result is answered`, async () => {
      const question = new HumanMessage('Weather in Paris?');
      const ai = await chat().invoke([question]);
      assert.equal(ai.tool_calls?.length, 1);
      const call = ai.tool_calls![0]!;
      assert.equal(call.name, 'get_weather');
      assert.deepEqual(call.args, PARIS);
      assert.ok(call.id);
      assert.equal(ai.response_metadata.finish_reason, 'tool_calls');
      assert.ok(ai.usage_metadata!.total_tokens > 0);

      const next = await chat().invoke([question, ai, new ToolMessage({ tool_call_id: call.id!, content: TOOL_RESULT })]);
      assert.equal(next.content, `Tool said: ${TOOL_RESULT}`);
      assert.equal(next.tool_calls?.length ?? 0, 0);
    });

    test(`${label}: stream yields tool_call_chunks that concatenate into the call`, async () => {
      let whole: AIMessageChunk | undefined;
      let withChunks = 0;
      let named = 0;
      for await (const chunk of await chat().stream([new HumanMessage('Weather in Paris?')])) {
        const parts = chunk.tool_call_chunks ?? [];
        if (parts.length > 0) withChunks++;
        named += parts.filter((p) => p.name === 'get_weather').length;
        whole = whole ? whole.concat(chunk) : chunk;
      }
      assert.ok(withChunks >= 1, 'tool_call_chunks arrived');
      if (label === 'openai') assert.ok(withChunks > 1, 'the mock sent argument fragments; each is its own chunk');
      assert.equal(named, 1, 'the name comes once, with the first fragment');
      assert.equal(whole!.tool_calls?.length, 1);
      assert.equal(whole!.tool_calls![0]!.name, 'get_weather');
      assert.deepEqual(whole!.tool_calls![0]!.args, PARIS);
      assert.ok(whole!.usage_metadata && whole!.usage_metadata.output_tokens > 0, 'the usage chunk reached LangChain');
    });
  }
});
