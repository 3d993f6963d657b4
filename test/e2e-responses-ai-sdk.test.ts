// The Vercel AI SDK's default OpenAI provider speaks the Responses API
// (`createOpenAI(...)(model)` calls POST /v1/responses): generateText with a
// tool over two steps, and streamText, through the translated path.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, streamText, tool, stepCountIs } from 'ai';
import { z } from 'zod';
import { startTranscriptQueue, type QueueMock } from './mocks/transcript-queue.js';
import { startGateway, type TestGateway } from './helpers/gateway.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

const base = { id: 'chatcmpl-up', object: 'chat.completion', created: 1_700_000_000, model: 'up-model' };
const usage = { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 };

describe('the Vercel AI SDK through /v1/responses', () => {
  let mock: QueueMock;
  let gw: TestGateway;
  let provider: ReturnType<typeof createOpenAI>;

  before(async () => {
    mock = await startTranscriptQueue();
    gw = await startGateway({
      config: {
        providers: { up: { kind: 'openai', base_url: `${mock.url}/v1`, no_auth: true } },
        models: [{ id: 'up-model', provider: 'up', context_window: 8_000, pricing: { prompt: 1, completion: 2 } }],
        organizations: [{ id: 'acme', models: ['up-model', 'mock-echo'] }],
      },
    });
    provider = createOpenAI({ baseURL: `${gw.url}/v1`, apiKey: await gw.key('acme') });
  });
  after(async () => { await gw.close(); await mock.close(); });

  test('generateText with a tool: the call, its result, and the final answer over two steps', async () => {
    mock.queue.push(
      { json: { ...base, choices: [{ index: 0, message: { role: 'assistant', content: 'Let me check.', tool_calls: [{ id: 'call_w', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }] }, finish_reason: 'tool_calls' }], usage } },
      { json: { ...base, choices: [{ index: 0, message: { role: 'assistant', content: 'It is 3C in Oslo.' }, finish_reason: 'stop' }], usage } },
    );
    const seen: string[] = [];
    const result = await generateText({
      model: provider('up-model'),
      prompt: 'Weather in Oslo?',
      tools: { weather: tool({ description: 'Weather by city', inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => { seen.push(city); return { city, celsius: 3 }; } }) },
      stopWhen: stepCountIs(3),
    });
    assert.deepEqual(seen, ['Oslo']);
    assert.equal(result.text, 'It is 3C in Oslo.');
    assert.equal(result.steps.length, 2);
    assert.ok(mock.requests[0]!.url.endsWith('/v1/chat/completions'), 'translated onto chat');
    // The second step references the first step's message by id (store defaults to true): the gateway resolves it.
    const second = mock.requests[1]!.body.messages;
    assert.deepEqual(second.map((m: any) => m.role), ['user', 'assistant', 'tool']);
    assert.equal(second[1].content, 'Let me check.');
    assert.equal(second[1].tool_calls[0].id, 'call_w');
    assert.deepEqual(JSON.parse(second[2].content), { city: 'Oslo', celsius: 3 });
    assert.equal(result.totalUsage.inputTokens, 10);
    const textPart: any = result.steps[0]!.content.find((c) => c.type === 'text');
    assert.match(textPart.providerMetadata.openai.itemId, /^msg_[0-9a-f]{32}_\d+$/, 'the SDK sent this id back as an item_reference');
  });

  test('streamText: text deltas in order, finish reason and usage', async () => {
    const result = streamText({ model: provider('mock-echo'), prompt: 'stream through the AI SDK' });
    let text = '';
    for await (const delta of result.textStream) text += delta;
    assert.equal(text, 'stream through the AI SDK');
    assert.equal(await result.finishReason, 'stop');
    assert.ok(((await result.usage).totalTokens ?? 0) > 0);
  });

  test('a Mistral reasoning model\'s content chunks (thinking, then text) become reasoning and text, JSON and stream', async () => {
    const thinking = (text: string) => ({ type: 'thinking', thinking: [{ type: 'text', text }] });
    mock.queue.push({ json: { ...base, choices: [{ index: 0, message: { role: 'assistant', content: [thinking('Paris is the capital.'), { type: 'text', text: 'Paris.' }] }, finish_reason: 'stop' }], usage } });
    const json = await generateText({ model: provider('up-model'), prompt: 'Capital of France?' });
    assert.equal(json.text, 'Paris.');
    assert.equal(json.reasoningText, 'Paris is the capital.');
    const chunk = (delta: object, finish: string | null = null) => ({ data: { ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] } });
    mock.queue.push({ sse: [
      chunk({ role: 'assistant', content: '' }), chunk({ content: [thinking('Paris is ')] }), chunk({ content: [thinking('the capital.')] }),
      chunk({ content: [{ type: 'text', text: 'Par' }] }), chunk({ content: [{ type: 'text', text: 'is.' }] }), chunk({}, 'stop'),
      { data: { ...base, object: 'chat.completion.chunk', choices: [], usage } }, { data: '[DONE]' },
    ] });
    const streamed = streamText({ model: provider('up-model'), prompt: 'Capital of France?' });
    let text = '';
    for await (const delta of streamed.textStream) text += delta;
    assert.equal(text, 'Paris.');
    assert.equal(await streamed.reasoningText, 'Paris is the capital.');
    // A chunk of a kind with no Responses form fails the answer rather than vanish from it.
    mock.queue.push({ json: { ...base, choices: [{ index: 0, message: { role: 'assistant', content: [{ type: 'reference', reference_ids: [1] }, { type: 'text', text: 'Paris.' }] }, finish_reason: 'stop' }], usage } });
    const res = await fetch(`${gw.url}/v1/responses`, { method: 'POST', headers: { authorization: `Bearer ${await gw.key('acme')}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'up-model', input: 'x' }) });
    assert.equal(res.status, 502);
    assert.match(((await res.json()) as any).error.message, /"reference" content chunk/);
    // Streamed, after output began: the stream's failure events.
    mock.queue.push({ sse: [chunk({ role: 'assistant', content: 'Paris' }), chunk({ content: [{ type: 'reference', reference_ids: [1] }] }), chunk({}, 'stop'), { data: '[DONE]' }] });
    const cut = await fetch(`${gw.url}/v1/responses`, { method: 'POST', headers: { authorization: `Bearer ${await gw.key('acme')}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'up-model', input: 'x', stream: true }) });
    assert.equal(cut.status, 200);
    const events = await cut.text();
    assert.match(events, /response\.output_text\.delta/);
    assert.match(events, /event: response\.failed/);
    assert.match(events, /event: error\ndata: .*"reference\\" content chunk/);
  });
});
