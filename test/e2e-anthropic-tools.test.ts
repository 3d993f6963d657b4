// Tool calling, structured output and rate limits against Anthropic through a
// real gateway, with the official openai SDK as the client: the caller speaks
// OpenAI's full chat shape, the mock hears Anthropic's Messages wire format.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { z } from 'zod';
import { startAnthropicMock, ANTHROPIC_MOCK_KEY } from './mocks/anthropic-mock.js';
import type { MockUpstream } from './mocks/mock-server.js';
import { HTTP_KINDS, startGateway, type TestGateway } from './helpers/gateway.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

const MODEL = 'claude-sonnet-4-20250514';
const weather: ChatCompletionTool = {
  type: 'function',
  function: { name: 'get_weather', description: 'Current weather in a city', parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] } },
};

for (const http of HTTP_KINDS) {
  describe(`Anthropic tools and structured output over ${http}`, () => {
    let claude: MockUpstream;
    let gw: TestGateway;
    let client: OpenAI;
    let key: string;

    before(async () => {
      claude = await startAnthropicMock();
      gw = await startGateway({
        http,
        env: { SLUICE_T_ANTHROPIC: ANTHROPIC_MOCK_KEY },
        config: {
          providers: { anthropic: { kind: 'anthropic', base_url: `${claude.url}/v1`, api_key_env: 'SLUICE_T_ANTHROPIC' } },
          organizations: [{ id: 'acme', models: [MODEL] }],
        },
      });
      key = await gw.key('acme');
      client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
    });
    after(async () => { await gw.close(); await claude.close(); });

    test('a tool call as JSON: tool_use becomes tool_calls, content null, finish tool_calls', async () => {
      const r = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Weather in Paris?' }], tools: [weather], tool_choice: 'required' });
      const choice = r.choices[0]!;
      assert.equal(choice.finish_reason, 'tool_calls');
      assert.equal(choice.message.content, null);
      const call = choice.message.tool_calls![0]!;
      assert.match(call.id, /^toolu_/);
      assert.deepEqual(call.type === 'function' && call.function, { name: 'get_weather', arguments: '{"location":"Paris"}' });
      const sent = claude.requests.at(-1)!.body;
      assert.deepEqual(sent.tools, [{ name: 'get_weather', description: 'Current weather in a city', input_schema: weather.function.parameters }]);
      assert.deepEqual(sent.tool_choice, { type: 'any' });
    });

    test('a streamed tool call through the SDK helper: argument fragments reassemble, events fire', async () => {
      const runner = client.chat.completions.stream({ model: MODEL, messages: [{ role: 'user', content: 'Weather?' }], tools: [weather] });
      const done: Array<{ name: string; arguments: string }> = [];
      runner.on('tool_calls.function.arguments.done', (e) => done.push({ name: e.name, arguments: e.arguments }));
      const final = await runner.finalChatCompletion();
      assert.deepEqual(done, [{ name: 'get_weather', arguments: '{"location":"Paris"}' }]);
      const call = final.choices[0]!.message.tool_calls![0]!;
      assert.deepEqual(call.type === 'function' && call.function, { name: 'get_weather', arguments: '{"location":"Paris"}' });
      assert.equal(final.choices[0]!.finish_reason, 'tool_calls');
    });

    test('a two-step tool loop: the tool result goes back as a tool_result block', async () => {
      const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
      const first = await client.chat.completions.create({ model: MODEL, messages, tools: [weather] });
      const assistant = first.choices[0]!.message;
      const call = assistant.tool_calls![0]!;
      messages.push(assistant, { role: 'tool', tool_call_id: call.id, content: 'sunny, 21 C' });
      const second = await client.chat.completions.create({ model: MODEL, messages, tools: [weather] });
      assert.equal(second.choices[0]!.message.content, 'Tool said: sunny, 21 C');
      assert.equal(second.choices[0]!.finish_reason, 'stop');
      const sent = claude.requests.at(-1)!.body.messages;
      assert.deepEqual(sent.map((m: any) => m.role), ['user', 'assistant', 'user']);
      assert.deepEqual(sent[1].content, [{ type: 'tool_use', id: call.id, name: 'get_weather', input: { location: 'Paris' } }]);
      assert.deepEqual(sent[2].content, [{ type: 'tool_result', tool_use_id: call.id, content: [{ type: 'text', text: 'sunny, 21 C' }] }]);
    });

    test('json_schema through .parse(): a forced tool on the wire, parsed content for the caller', async () => {
      const Weather = z.object({ city: z.string(), temp: z.number() });
      (claude as MockUpstream).toolArguments = { city: 'Paris', temp: 21.5 };
      try {
        const r = await client.chat.completions.parse({ model: MODEL, messages: [{ role: 'user', content: 'Weather?' }], response_format: zodResponseFormat(Weather, 'weather') });
        assert.deepEqual(r.choices[0]!.message.parsed, { city: 'Paris', temp: 21.5 });
        assert.equal(r.choices[0]!.finish_reason, 'stop');
        assert.equal(r.choices[0]!.message.tool_calls?.length ?? 0, 0);
        assert.deepEqual(claude.requests.at(-1)!.body.tool_choice, { type: 'tool', name: 'sluice_json_response' });
      } finally {
        claude.toolArguments = undefined;
      }
    });

    test('a field Anthropic cannot honour is a 400 naming it and the provider; nothing is sent', async () => {
      const before = claude.requests.length;
      for (const [body, param] of [[{ n: 2 }, 'n'], [{ seed: 1 }, 'seed'], [{ logprobs: true }, 'logprobs']] as const) {
        await assert.rejects(client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], ...body } as any), (e: any) => {
          assert.equal(e.status, 400);
          assert.equal(e.param, param);
          assert.match(e.message, /Anthropic/);
          return true;
        });
      }
      assert.equal(claude.requests.length, before);
    });

    test('prompt caching: cache_control marks on parts and tools reach Anthropic; an unknown part member is a 400 naming it', async () => {
      const mark = { type: 'ephemeral' as const };
      // The mark is not in the SDK's types: LiteLLM's and OpenRouter's convention for OpenAI-shaped messages.
      const messages = [
        { role: 'system', content: [{ type: 'text', text: 'A long and stable system prompt.', cache_control: mark }] },
        { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?', cache_control: mark }] },
      ] as unknown as ChatCompletionMessageParam[];
      const r = await client.chat.completions.create({ model: MODEL, messages, tools: [{ ...weather, cache_control: mark } as ChatCompletionTool] });
      assert.equal(r.choices[0]!.finish_reason, 'tool_calls');
      const sent = claude.requests.at(-1)!.body;
      assert.deepEqual(sent.system, [{ type: 'text', text: 'A long and stable system prompt.', cache_control: mark }]);
      assert.deepEqual(sent.messages[0].content, [{ type: 'text', text: 'Weather in Paris?', cache_control: mark }]);
      assert.deepEqual(sent.tools[0].cache_control, mark);
      const before = claude.requests.length;
      const odd = [{ role: 'user', content: [{ type: 'text', text: 'hi', citations: { enabled: true } }] }] as unknown as ChatCompletionMessageParam[];
      await assert.rejects(client.chat.completions.create({ model: MODEL, messages: odd }), (e: any) => e.status === 400 && e.param === 'messages.0.content.0.citations');
      assert.equal(claude.requests.length, before);
    });

    test('a tool input nested 100,000 deep is the upstream\'s fault: 502 upstream_error, not the caller\'s 400', async () => {
      const deep = `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`;
      claude.replay = { text: `{"id":"msg_deep","type":"message","role":"assistant","model":"${MODEL}","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":${deep}}],"stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":5}}` };
      try {
        const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], tools: [weather] }) });
        const body: any = await res.json();
        assert.equal(res.status, 502, JSON.stringify(body));
        assert.equal(body.error.code, 'upstream_error');
        assert.match(body.error.message, /nested too deeply/);
      } finally {
        claude.replay = undefined;
      }
    });

    test('a 429 keeps its status and type, with Anthropic rate-limit headers under OpenAI names', async () => {
      const fixture = JSON.parse(readFileSync(new URL('../../test/fixtures/anthropic/rate-limited.json', import.meta.url), 'utf8'));
      claude.replay = fixture.response;
      try {
        const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }) });
        assert.equal(res.status, 429);
        assert.equal(res.headers.get('retry-after'), '7');
        assert.equal(res.headers.get('x-ratelimit-limit-requests'), '50');
        assert.equal(res.headers.get('x-ratelimit-remaining-tokens'), '39000');
        const body: any = await res.json();
        assert.equal(body.error.type, 'rate_limit_error');
      } finally {
        claude.replay = undefined;
      }
    });
  });
}
