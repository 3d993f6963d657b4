// Gemini streams through a real gateway, with the official openai SDK as the
// client, against scripted wire transcripts: Gemini has no terminator event,
// so a candidate may first appear after another's finish and the usage may
// come in a chunk after the finish reasons. The stream must read as create()
// reads the same answer, and a part with no chat form fails either way.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startGeminiMock, GEMINI_MOCK_KEY, type GeminiMockUpstream } from './mocks/gemini-mock.js';
import type { Transcript } from './mocks/mock-server.js';
import { HTTP_KINDS, startGateway, type TestGateway } from './helpers/gateway.js';
import { eventually } from './helpers/resources.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

const MODEL = 'gemini-2.5-flash';
const usage = { promptTokenCount: 50, candidatesTokenCount: 30, totalTokenCount: 80 };
const text = (t: string) => ({ role: 'model', parts: [{ text: t }] });

/** The same answer as one JSON body and as SSE chunks. */
function both(json: object, chunks: object[], pace_ms = 5): [Transcript, Transcript] {
  return [{ json }, { sse: chunks.map((data) => ({ data })), pace_ms }];
}

/** What the SDK's reading of a completion is checked on: choices and usage, not the id or the time. */
const shape = (c: OpenAI.Chat.ChatCompletion) => ({
  choices: c.choices.map((ch) => ({ index: ch.index, content: ch.message.content, finish_reason: ch.finish_reason })),
  usage: c.usage,
});

for (const http of HTTP_KINDS) {
  describe(`Gemini streams over ${http}`, () => {
    let gem: GeminiMockUpstream;
    let gw: TestGateway;
    let client: OpenAI;

    before(async () => {
      gem = await startGeminiMock();
      gw = await startGateway({
        http,
        env: { SLUICE_T_GEMINI: GEMINI_MOCK_KEY },
        config: {
          providers: { gemini: { kind: 'gemini', base_url: `${gem.url}/v1beta`, api_key_env: 'SLUICE_T_GEMINI', retry: { max_attempts: 1 } } },
          // Short, for the body that stalls after its last chunk; the paced transcripts read every 5 ms.
          upstream: { body_timeout_ms: 400 },
          organizations: [{ id: 'acme', models: [MODEL] }],
        },
      });
      client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: await gw.key('acme'), maxRetries: 0 });
    });
    after(async () => { await gw.close(); await gem.close(); });

    /** The trace of the request made by `call`, once written. */
    async function traced(call: () => Promise<unknown>): Promise<Record<string, any>> {
      const before = gw.traces.rows.length;
      await call();
      assert.ok(await eventually(() => gw.traces.rows.length > before, 3_000), 'traced');
      return gw.traces.rows.at(-1)!;
    }

    test('n: 2 with candidate 1 first seen after candidate 0 finished: both choices and the usage, as create() reads them; cut before its finish, the SSE error event', async () => {
      const req = { model: MODEL, n: 2, messages: [{ role: 'user' as const, content: 'hi' }] };
      gem.script.push(...both(
        { candidates: [{ content: text('one'), finishReason: 'STOP', index: 0 }, { content: text('two'), finishReason: 'STOP', index: 1 }], usageMetadata: usage, responseId: 'r1' },
        [
          { candidates: [{ content: text('one'), finishReason: 'STOP', index: 0 }], responseId: 'r1' },
          { candidates: [{ content: text('tw'), index: 1 }], responseId: 'r1' },
          { candidates: [{ content: text('o'), finishReason: 'STOP', index: 1 }], usageMetadata: usage, responseId: 'r1' },
        ],
      ).map((transcript) => ({ transcript })));
      const json = await client.chat.completions.create(req);
      let streamed: OpenAI.Chat.ChatCompletion | undefined;
      const trace = await traced(async () => { streamed = await client.chat.completions.stream(req).finalChatCompletion(); });
      assert.deepEqual(shape(streamed!), shape(json));
      assert.deepEqual(shape(json).choices.map((c) => c.content), ['one', 'two']);
      assert.deepEqual([trace.prompt_tokens, trace.completion_tokens], [50, 30]);

      // A body that ends before a candidate seen finishes was cut short: the SSE error event.
      gem.script.push({ transcript: { sse: [
        { data: { candidates: [{ content: text('one'), finishReason: 'STOP', index: 0 }], responseId: 'r2' } },
        { data: { candidates: [{ content: text('tw'), index: 1 }], usageMetadata: usage, responseId: 'r2' } },
      ], pace_ms: 5 } });
      const stream = await client.chat.completions.create({ model: MODEL, n: 2, stream: true, messages: [{ role: 'user', content: 'hi' }] });
      const seen: string[] = [];
      await assert.rejects((async () => { for await (const c of stream) for (const ch of c.choices) seen.push(ch.delta.content ?? ''); })(),
        (e: any) => /ended before it completed/.test(e.message));
      assert.deepEqual(seen.join(''), 'onetw');
    });

    test('usage in a chunk of its own after the finish reason: the usage chunk, the trace and the Responses API carry it', async () => {
      const chunks = [
        { candidates: [{ content: text('Hello'), index: 0 }], responseId: 'r3' },
        { candidates: [{ content: text(' there'), finishReason: 'STOP', index: 0 }], responseId: 'r3' },
        { usageMetadata: usage, modelVersion: MODEL, responseId: 'r3' },
      ];
      const json = { candidates: [{ content: text('Hello there'), finishReason: 'STOP', index: 0 }], usageMetadata: usage, responseId: 'r3' };
      gem.script.push(...both(json, chunks).map((transcript) => ({ transcript })));
      const req = { model: MODEL, messages: [{ role: 'user' as const, content: 'hi' }] };
      const created = await client.chat.completions.create(req);
      let streamed: OpenAI.Chat.ChatCompletion | undefined;
      const trace = await traced(async () => { streamed = await client.chat.completions.stream(req).finalChatCompletion(); });
      assert.deepEqual(shape(streamed!), shape(created));
      assert.equal(streamed!.usage?.total_tokens, 80);
      assert.deepEqual([trace.prompt_tokens, trace.completion_tokens], [50, 30]);
      // The Responses API reads the same chat stream.
      gem.script.push({ transcript: { sse: chunks.map((data) => ({ data })) } });
      const r = await client.responses.stream({ model: MODEL, input: 'hi' }).finalResponse();
      assert.equal(r.output_text, 'Hello there');
      assert.deepEqual([r.usage?.input_tokens, r.usage?.output_tokens, r.usage?.total_tokens], [50, 30, 80]);
    });

    test('no usageMetadata at all: the gateway\'s estimate is reported and charged, JSON and stream alike, not 0', async () => {
      const json = { candidates: [{ content: text('Twelve chars'), finishReason: 'STOP', index: 0 }], responseId: 'r5' };
      const chunks = [{ candidates: [{ content: text('Twelve'), index: 0 }], responseId: 'r5' }, { candidates: [{ content: text(' chars'), finishReason: 'STOP', index: 0 }], responseId: 'r5' }];
      gem.script.push(...both(json, chunks).map((transcript) => ({ transcript })));
      const req = { model: MODEL, messages: [{ role: 'user' as const, content: 'hi' }] };
      let created: OpenAI.Chat.ChatCompletion | undefined;
      const jsonTrace = await traced(async () => { created = await client.chat.completions.create(req); });
      let streamed: OpenAI.Chat.ChatCompletion | undefined;
      const streamTrace = await traced(async () => { streamed = await client.chat.completions.stream(req).finalChatCompletion(); });
      for (const [c, trace] of [[created!, jsonTrace], [streamed!, streamTrace]] as const) {
        // "Twelve chars" is 12 characters, 3 tokens at four a token; the prompt is estimated as every prompt is.
        assert.equal(c.usage?.completion_tokens, 3, JSON.stringify(c.usage));
        assert.ok(c.usage!.prompt_tokens > 0, JSON.stringify(c.usage));
        assert.deepEqual([trace.prompt_tokens, trace.completion_tokens], [c.usage!.prompt_tokens, 3]);
      }
    });

    test('a body that stalls after every finish and its usage: the usage chunk, then the SSE error event at the body timeout; the trace is charged that usage', async () => {
      gem.script.push({ transcript: { sse: [
        { data: { candidates: [{ content: text('Hello'), finishReason: 'STOP', index: 0 }], responseId: 'r5' } },
        { data: { usageMetadata: usage, responseId: 'r5' } },
      ], hold_open: true } });
      const stream = await client.chat.completions.create({ model: MODEL, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] });
      let seen = '';
      let total: number | undefined;
      const trace = await traced(() => assert.rejects((async () => {
        for await (const c of stream) { seen += c.choices[0]?.delta.content ?? ''; total = c.usage?.total_tokens ?? total; }
      })(), (e: any) => e instanceof OpenAI.APIError && e.code === 'upstream_error'));
      assert.equal(seen, 'Hello');
      assert.equal(total, 80);
      assert.equal(trace.stream_aborted, true);
      assert.deepEqual([trace.prompt_tokens, trace.completion_tokens], [50, 30]);
    });

    for (const [kind, part] of [
      ['inlineData', { inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } }],
      ['executableCode', { executableCode: { language: 'PYTHON', code: 'print(1)' } }],
      ['fileData', { fileData: { mimeType: 'image/png', fileUri: 'gs://b/chart.png' } }],
    ] as const) {
      test(`${kind} before a text part: 502 upstream_error as JSON, the SSE error event mid-stream`, async () => {
        const parts = [part, { text: 'Here is the chart.' }];
        gem.script.push(...both(
          { candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }], usageMetadata: usage, responseId: 'r4' },
          [
            { candidates: [{ content: text('Sure. '), index: 0 }], responseId: 'r4' },
            { candidates: [{ content: { role: 'model', parts }, index: 0 }], responseId: 'r4' },
            { candidates: [{ content: text(''), finishReason: 'STOP', index: 0 }], usageMetadata: usage, responseId: 'r4' },
          ],
        ).map((transcript) => ({ transcript })));
        const req = { model: MODEL, messages: [{ role: 'user' as const, content: 'chart it' }] };
        await assert.rejects(client.chat.completions.create(req), (e: any) => e.status === 502 && e.code === 'upstream_error' && e.message.includes(kind));
        const stream = await client.chat.completions.create({ ...req, stream: true });
        let seen = '';
        await assert.rejects((async () => { for await (const c of stream) seen += c.choices[0]?.delta.content ?? ''; })(),
          (e: any) => e instanceof OpenAI.APIError && e.code === 'upstream_error' && e.message.includes(kind));
        assert.equal(seen, 'Sure. ');
      });
    }
  });
}
