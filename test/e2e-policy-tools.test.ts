// Policy over the whole chat surface, not only message content: DLP over tool
// calls, tool results and names; moderation, buffered and chunked, over tool
// call arguments, refusals and every choice of n > 1.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import type { Transcript } from './mocks/mock-server.js';
import { HTTP_KINDS, startGateway, type TestGateway } from './helpers/gateway.js';
import { readSse, UPSTREAM_KEY_ENV } from './helpers/fixtures.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

const moderation = (mode: 'buffered' | 'chunked') => ({
  mode, rules: [{ name: 'weapons', category: 'violence', terms: ['make a bomb'] }, { name: 'cards', category: 'fraud', pattern: '\\d{16}', max_length: 16 }],
});

const base = { id: 'chatcmpl-up', object: 'chat.completion', created: 1_700_000_000, model: 'up-model' };
const usage = { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 };

/** A JSON completion whose choices hold `messages`. */
const completion = (...messages: object[]): Transcript => ({
  json: { ...base, choices: messages.map((message, index) => ({ index, message: { role: 'assistant', content: null, ...message }, finish_reason: 'stop' })), usage },
});

/** A stream of one tool call whose arguments arrive in `fragments`. */
function toolCallStream(fragments: string[], lead = ''): Transcript {
  const chunk = (delta: object, finish: string | null = null) => ({ data: { ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] } });
  return {
    sse: [
      chunk({ role: 'assistant', content: lead }),
      chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'send', arguments: '' } }] }),
      ...fragments.map((arguments_) => chunk({ tool_calls: [{ index: 0, function: { arguments: arguments_ } }] })),
      chunk({}, 'tool_calls'),
      { data: { ...base, object: 'chat.completion.chunk', choices: [], usage } },
      { data: '[DONE]' },
    ],
  };
}

/** The JSON of every `data:` event but the terminator. */
const dataChunks = (events: string[]): any[] =>
  events.filter((e) => e.startsWith('data: ') && e !== 'data: [DONE]').map((e) => JSON.parse(e.slice(6)));

for (const http of HTTP_KINDS) {
  describe(`policy over tool calls, refusals and choices: ${http}`, () => {
    let mock: OpenAIMock;
    let gw: TestGateway;
    const keys: Record<string, string> = {};

    before(async () => {
      mock = await startOpenAIMock();
      gw = await startGateway({
        http,
        env: { [UPSTREAM_KEY_ENV]: OPENAI_MOCK_KEY },
        config: {
          // Small, so a long stream under buffered moderation meets the cap on what it may hold.
          upstream: { max_response_bytes: 64 * 1024 },
          providers: { up: { kind: 'openai', base_url: `${mock.url}/v1`, api_key_env: UPSTREAM_KEY_ENV } },
          models: [{ id: 'up-model', provider: 'up', context_window: 8_000, pricing: { prompt: 1, completion: 2 } }],
          organizations: [
            { id: 'buffered', models: ['up-model'], policy: { dlp: { detectors: 'all' }, shield: { builtin: false }, moderation: moderation('buffered') } },
            { id: 'chunked', models: ['up-model'], policy: { dlp: { detectors: [] }, shield: { builtin: false }, moderation: moderation('chunked') } },
          ],
        },
      });
      for (const org of ['buffered', 'chunked']) keys[org] = await gw.key(org);
    });
    after(async () => { await gw.close(); await mock.close(); });

    const chat = (org: string, body: object) => fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${keys[org]}` }, body: JSON.stringify({ model: 'up-model', ...body }),
    });
    const user = [{ role: 'user', content: 'go' }];

    test('DLP redacts tool-call arguments, tool results, names and developer messages before the upstream', async () => {
      mock.replay = completion({ content: 'ok' });
      const res = await chat('buffered', {
        messages: [
          { role: 'developer', content: 'Operator bob@example.com' },
          { role: 'user', name: 'alice@example.com', content: 'mail her' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'send', arguments: '{"to":"alice@example.com","card":"4111 1111 1111 1111"}' } }] },
          { role: 'tool', tool_call_id: 'call_1', content: 'sent to alice@example.com' },
        ],
      });
      assert.equal(res.status, 200, await res.clone().text());
      const sent = mock.requests.at(-1)!.body.messages;
      const wire = JSON.stringify(sent);
      for (const secret of ['alice@example.com', 'bob@example.com', '4111 1111 1111 1111']) assert.ok(!wire.includes(secret), secret);
      // The arguments stay valid JSON, the placeholders consistent across every text of the request.
      assert.deepEqual(JSON.parse(sent[2].tool_calls[0].function.arguments), { to: '[EMAIL_2]', card: '[CARD_1]' });
      assert.equal(sent[1].name, '[EMAIL_2]');
      assert.equal(sent[3].content, 'sent to [EMAIL_2]');
      assert.equal(sent[3].tool_call_id, 'call_1');
    });

    test('DLP keeps tool-call arguments valid JSON: a redacted number becomes its placeholder string', async () => {
      mock.replay = completion({ content: 'ok' });
      const res = await chat('buffered', {
        messages: [
          { role: 'user', content: 'pay' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'pay', arguments: '{"card": 4111111111111111, "amount": 12, "note": ["to bob@example.com"]}' } }] },
          { role: 'tool', tool_call_id: 'c', content: 'ok' },
        ],
      });
      assert.equal(res.status, 200);
      const args = JSON.parse(mock.requests.at(-1)!.body.messages[1].tool_calls[0].function.arguments);
      assert.deepEqual(args, { card: '[CARD_1]', amount: 12, note: ['to [EMAIL_1]'] });
    });

    test('DLP redacts an assistant turn\'s refusal, refusal parts and reasoning before the upstream', async () => {
      mock.replay = completion({ content: 'ok' });
      const thinking = [{ type: 'thinking', thinking: 'carol@example.com asked', signature: 'sig' }, { type: 'redacted_thinking', data: 'opaque' }];
      const res = await chat('buffered', {
        messages: [
          { role: 'user', content: 'mail carol' },
          { role: 'assistant', content: null, refusal: 'I will not mail carol@example.com.', reasoning_content: 'carol@example.com is private', thinking_blocks: thinking },
          { role: 'assistant', content: [{ type: 'refusal', refusal: 'Not to dave@example.com either.' }] },
          { role: 'user', content: 'fine' },
        ],
      });
      assert.equal(res.status, 200, await res.clone().text());
      const sent = mock.requests.at(-1)!.body.messages;
      const wire = JSON.stringify(sent);
      for (const secret of ['carol@example.com', 'dave@example.com']) assert.ok(!wire.includes(secret), secret);
      assert.equal(sent[1].refusal, 'I will not mail [EMAIL_1].');
      assert.equal(sent[1].reasoning_content, '[EMAIL_1] is private');
      // Signed thinking goes back upstream too (it was sent unscanned): its text is redacted, the rest kept.
      assert.deepEqual(sent[1].thinking_blocks, [{ type: 'thinking', thinking: '[EMAIL_1] asked', signature: 'sig' }, { type: 'redacted_thinking', data: 'opaque' }]);
      assert.deepEqual(sent[2].content, [{ type: 'refusal', refusal: 'Not to [EMAIL_2] either.' }]);
    });

    test('DLP reads every member an OpenAI-compatible upstream is sent, known or not: none carries a value past it', async () => {
      mock.replay = completion({ content: 'ok' });
      // Raw text: a "__proto__" member is a member like any other, and must not escape as a prototype.
      const text = JSON.stringify({
        model: 'up-model',
        messages: [{ role: 'user', content: 'hi', x_context: { owner: 'erin@example.com', ids: [4111111111111111] } }],
        prediction: { type: 'content', content: 'Dear alice@example.com,' },
        metadata: { owner: 'bob@example.com' },
        user: 'carol@example.com',
        safety_identifier: 'dave@example.com',
        x_vendor_field: ['mail frank@example.com'],
      }).replace('"x_vendor_field"', '"__proto__":{"note":"grace@example.com"},"x_vendor_field"');
      const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keys.buffered}` }, body: text });
      assert.equal(res.status, 200, await res.clone().text());
      const sent = mock.requests.at(-1)!;
      const wire = JSON.stringify(sent.body) + JSON.stringify(Object.getOwnPropertyDescriptor(sent.body, '__proto__')?.value);
      for (const secret of ['alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'grace', '4111111111111111']) assert.ok(!wire.includes(secret), secret);
      assert.match(sent.body.prediction.content, /^Dear \[EMAIL_\d\],$/);
      assert.match(sent.body.metadata.owner, /^\[EMAIL_\d\]$/);
      assert.match(sent.body.user, /^\[EMAIL_\d\]$/);
      assert.deepEqual(sent.body.messages[0].x_context.ids, ['[CARD_1]']);
      assert.match(Object.getOwnPropertyDescriptor(sent.body, '__proto__')!.value.note, /^\[EMAIL_\d\]$/);
      // Settings and what the application writes go as sent.
      assert.equal(sent.body.model, 'up-model');
      assert.equal((await gw.traces.waitFor(res.headers.get('x-request-id')!)).redactions, 8);
    });

    test('DLP reads every string of a content part but its bytes: an unknown member, an image URL\'s query, a file\'s name', async () => {
      mock.replay = completion({ content: 'ok' });
      const png = `data:image/png;base64,${Buffer.from('not really a png, hank@example.com').toString('base64')}`;
      const res = await chat('buffered', {
        messages: [{
          role: 'user',
          content: [
            { type: 'text', text: 'see', x_note: 'ivy@example.com' },
            { type: 'image_url', image_url: { url: 'https://img.example.net/a.png?owner=jill@example.com', detail: 'low' } },
            { type: 'image_url', image_url: { url: png } },
            { type: 'file', file: { filename: 'kim@example.com report.pdf', file_data: 'data:application/pdf;base64,bGVvQGV4YW1wbGUuY29t' } },
            { type: 'input_audio', input_audio: { data: 'bWlrZUBleGFtcGxlLmNvbQ==', format: 'wav' } },
          ],
        }],
      });
      assert.equal(res.status, 200, await res.clone().text());
      const [text, image, inline, file, audio] = mock.requests.at(-1)!.body.messages[0].content;
      assert.match(text.x_note, /^\[EMAIL_\d\]$/);
      assert.match(image.image_url.url, /^https:\/\/img\.example\.net\/a\.png\?owner=\[EMAIL_\d\]$/);
      assert.equal(image.image_url.detail, 'low');
      assert.match(file.file.filename, /^\[EMAIL_\d\] report\.pdf$/);
      // Bytes go as sent: a base64 image, a file's data, a recording.
      assert.equal(inline.image_url.url, png);
      assert.equal(file.file.file_data, 'data:application/pdf;base64,bGVvQGV4YW1wbGUuY29t');
      assert.deepEqual(audio.input_audio, { data: 'bWlrZUBleGFtcGxlLmNvbQ==', format: 'wav' });
    });

    test('buffered moderation blocks a tool call whose arguments match, JSON and stream', async () => {
      mock.replay = completion({ tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'search', arguments: '{"q":"how to make a bomb"}' } }] });
      const json = await chat('buffered', { messages: user });
      assert.equal(json.status, 422);
      assert.equal(((await json.json()) as any).error.code, 'content_blocked');
      mock.replay = toolCallStream(['{"q":"how to make', ' a bomb"}']);
      const stream = await chat('buffered', { messages: user, stream: true });
      assert.equal(stream.status, 422, 'buffered mode blocks before the first byte');
      // The upstream made the blocked answer, and its provider bills it: both are charged, the upstream's usage.
      for (const res of [json, stream]) {
        const trace = await gw.traces.waitFor(res.headers.get('x-request-id')!);
        assert.deepEqual([trace.status_code, trace.prompt_tokens, trace.completion_tokens], [422, usage.prompt_tokens, usage.completion_tokens]);
        assert.ok(trace.cost_usd > 0);
      }
    });

    test('moderation reads arguments and content as the application\'s JSON parser does: a term spelled with escapes is blocked, buffered and chunked', async () => {
      const escaped = '{"q":"how to make a bo\\u006db"}';
      mock.replay = completion({ tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'search', arguments: escaped } }] });
      const json = await chat('buffered', { messages: user });
      assert.equal(json.status, 422);
      mock.replay = completion({ content: '{"answer":"make a b\\u006fmb"}' });
      assert.equal((await chat('buffered', { messages: user })).status, 422, 'a structured answer');
      mock.replay = toolCallStream(['{"q":"how to make a bo\\u00', '6db", "and":"more text after it"}'], 'Let me look that up for you. ');
      const res = await chat('chunked', { messages: user, stream: true });
      const text = await res.text();
      assert.match(text, /event: error\ndata: .*"code":"content_blocked"/, text);
      assert.ok(!text.includes('make'), `no piece of the match was sent: ${text}`);
    });

    test('buffered moderation reads a stream as a client that takes each chunk\'s first choice, and reasoning_content else reasoning, reads it (LangChain)', async () => {
      const chunk = (index: number, delta: object) => ({ data: { ...base, object: 'chat.completion.chunk', choices: [{ index, delta, finish_reason: null }] } });
      const end = [{ data: { ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] } }, { data: '[DONE]' }];
      for (const [label, sse, blocked] of [
        ['split over two choices', [chunk(0, { role: 'assistant', content: 'how to make a ' }), chunk(1, { role: 'assistant', content: 'bomb' }), ...end], true],
        ['split over reasoning_content and reasoning', [chunk(0, { role: 'assistant', reasoning_content: 'how to make a ' }), chunk(0, { reasoning: 'bomb' }), chunk(0, { content: 'ok' }), ...end], true],
        ['call arguments split over two choices', [
          chunk(0, { role: 'assistant', tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'search', arguments: '{"q":"how to make a bo' } }] }),
          chunk(1, { tool_calls: [{ index: 0, function: { arguments: 'mb at home"}' } }] }), ...end], true],
        ['two clean choices', [chunk(0, { role: 'assistant', content: 'how to make a ' }), chunk(1, { role: 'assistant', content: 'cake' }), ...end], false],
      ] as const) {
        mock.replay = { sse: [...sse] };
        const res = await chat('buffered', { messages: user, stream: true, n: 2 });
        assert.equal(res.status, blocked ? 422 : 200, label);
        await res.text();
      }
    });

    test('under moderation a stream chunk for a choice the request did not ask for fails the stream: a first-choice client would merge it', async () => {
      const chunk = (index: number, delta: object, finish: string | null = null) => ({ data: { ...base, object: 'chat.completion.chunk', choices: [{ index, delta, finish_reason: finish }] } });
      const sse = [
        chunk(0, { role: 'assistant', content: 'A long and perfectly harmless answer first. Sure. To make a bo' }, 'stop'),
        chunk(1, { content: 'mb you need the following' }), { data: '[DONE]' },
      ];
      mock.replay = { sse };
      const buffered = await chat('buffered', { messages: user, stream: true });
      assert.equal(buffered.status, 502);
      assert.equal(((await buffered.json()) as any).error.code, 'upstream_error');
      mock.replay = { sse };
      const chunked = await chat('chunked', { messages: user, stream: true });
      const text = await chunked.text();
      // A 502 before the first byte, or the SSE error event after it, as the batches fall.
      assert.match(text, chunked.status === 502 ? /"code":"upstream_error"/ : /event: error\ndata: .*"code":"upstream_error"/, text);
      assert.ok(!text.includes('mb you need'), text);
    });

    test('buffered moderation blocks a refusal and any one of n choices', async () => {
      mock.replay = completion({ refusal: 'I will not explain how to make a bomb.' });
      assert.equal((await chat('buffered', { messages: user })).status, 422);
      mock.replay = completion({ content: 'fine' }, { content: 'here is how to make a bomb' });
      const blocked = await chat('buffered', { messages: user, n: 2 });
      assert.equal(blocked.status, 422);
      mock.replay = completion({ content: 'fine' }, { content: 'also fine' });
      const ok = await chat('buffered', { messages: user, n: 2 });
      assert.equal(ok.status, 200);
      const body: any = await ok.json();
      assert.deepEqual(body.choices.map((c: any) => c.message.content), ['fine', 'also fine']);
      assert.equal(mock.requests.at(-1)!.body.n, 2, 'n reaches the upstream');
    });

    test('buffered moderation holds at most upstream.max_response_bytes of a stream, then fails it before any byte', async () => {
      mock.replay = toolCallStream(Array.from({ length: 400 }, () => '"padding padding padding padding padding padding padding padding padding padding",'));
      const res = await chat('buffered', { messages: user, stream: true });
      assert.equal(res.status, 502);
      const body: any = await res.json();
      assert.equal(body.error.code, 'upstream_error');
      assert.match(body.error.message, /max_response_bytes/);
    });

    test('chunked moderation releases clean tool-call arguments whole, by the finish chunk', async () => {
      const fragments = ['{"q":', '"weather ', 'in Paris"', '}'];
      mock.replay = toolCallStream(fragments);
      const res = await chat('chunked', { messages: user, stream: true });
      assert.equal(res.status, 200);
      const chunks = dataChunks(await readSse(res));
      const args = chunks.flatMap((c) => c.choices.flatMap((ch: any) => ch.delta?.tool_calls ?? [])).map((t: any) => t.function?.arguments ?? '').join('');
      assert.equal(args, fragments.join(''));
      const first = chunks.flatMap((c) => c.choices.flatMap((ch: any) => ch.delta?.tool_calls ?? [])).find((t: any) => t.id);
      assert.equal(first.id, 'call_1');
      assert.equal(first.function.name, 'send');
      assert.equal(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0].finish_reason, 'tool_calls');
    });

    test('chunked moderation stops a tool call whose arguments match across fragments', async () => {
      mock.replay = toolCallStream(['{"q":"make a', ' bomb now, and do it quickly and quietly"}'], 'Let me look that up for you. ');
      const res = await chat('chunked', { messages: user, stream: true });
      assert.equal(res.status, 200, 'cleared content had begun the stream');
      const text = await res.text();
      assert.match(text, /event: error\ndata: .*"code":"content_blocked"/);
      assert.ok(!text.includes('bomb'), 'no fragment of the match was sent');
      const id = res.headers.get('x-request-id')!;
      const trace = await gw.traces.waitFor(id);
      assert.equal(trace.stream_aborted, true);
      assert.ok(trace.disclosed_bytes > 0);
    });

    test('chunked moderation stops a streamed refusal that matches across chunks', async () => {
      const chunk = (delta: object, finish: string | null = null) => ({ data: { ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] } });
      mock.replay = { sse: [
        chunk({ role: 'assistant', content: 'I am sorry, but this is something I cannot help with today. ' }),
        chunk({ refusal: 'I cannot explain how to make' }),
        chunk({ refusal: ' a bomb, or anything like it, in any detail at all.' }),
        chunk({}, 'stop'),
        { data: { ...base, object: 'chat.completion.chunk', choices: [], usage } },
        { data: '[DONE]' },
      ] };
      const res = await chat('chunked', { messages: user, stream: true });
      assert.equal(res.status, 200, 'cleared content had begun the stream');
      const text = await res.text();
      assert.match(text, /event: error\ndata: .*"code":"content_blocked"/);
      assert.ok(!text.includes('bomb'), 'no fragment of the match was sent');
      assert.ok(!text.includes('make'), 'the held-back window covers the start of the match');
      // Cut after it began: charged what the upstream made (its usage chunk never came, so the estimate).
      const trace = await gw.traces.waitFor(res.headers.get('x-request-id')!);
      assert.ok(trace.prompt_tokens > 0 && trace.completion_tokens > 0 && trace.cost_usd > 0, JSON.stringify(trace));
    });

    test('chunked moderation keeps a window per choice of n > 1: one choice\'s match stops the stream, the other\'s clean text is not mixed in', async () => {
      const chunk = (index: number, delta: object, finish: string | null = null) => ({ data: { ...base, object: 'chat.completion.chunk', choices: [{ index, delta, finish_reason: finish }] } });
      const clean = { sse: [
        chunk(0, { role: 'assistant', content: 'Paris is the capital ' }), chunk(1, { role: 'assistant', content: 'Lyon is a city ' }),
        chunk(0, { content: 'of France, on the Seine.' }), chunk(1, { content: 'on the Rhône and the Saône.' }),
        chunk(0, {}, 'stop'), chunk(1, {}, 'stop'),
        { data: { ...base, object: 'chat.completion.chunk', choices: [], usage } }, { data: '[DONE]' },
      ] };
      mock.replay = clean;
      const ok = await chat('chunked', { messages: user, stream: true, n: 2 });
      assert.equal(ok.status, 200);
      const texts = ['', ''];
      for (const c of dataChunks(await readSse(ok))) for (const ch of c.choices) texts[ch.index] += ch.delta?.content ?? '';
      assert.deepEqual(texts, ['Paris is the capital of France, on the Seine.', 'Lyon is a city on the Rhône and the Saône.']);
      // Choice 1 spells the term across its own chunks, with choice 0's text in between: only a window per choice sees it.
      mock.replay = { sse: [
        chunk(0, { role: 'assistant', content: 'Here is a long and perfectly harmless answer. ' }), chunk(1, { role: 'assistant', content: 'To make' }),
        chunk(0, { content: 'It goes on about the weather for a while. ' }), chunk(1, { content: ' a bomb you would need things I will not list.' }),
        chunk(0, {}, 'stop'), chunk(1, {}, 'stop'),
        { data: { ...base, object: 'chat.completion.chunk', choices: [], usage } }, { data: '[DONE]' },
      ] };
      const res = await chat('chunked', { messages: user, stream: true, n: 2 });
      const text = await res.text();
      assert.match(text, /event: error\ndata: .*"code":"content_blocked"/);
      assert.ok(!text.includes('bomb'), 'no fragment of the match was sent');
    });

    test('moderation reads reasoning: reasoning_content, `reasoning` (OpenRouter, vLLM, Ollama, Groq) and thinking blocks, buffered and chunked, JSON and stream', async () => {
      const chunk = (delta: object, finish: string | null = null) => ({ data: { ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] } });
      const reasoned = (pieces: string[], extra: object[] = [], member = 'reasoning_content'): Transcript => ({ sse: [
        chunk({ role: 'assistant', content: null, [member]: pieces[0] }), ...pieces.slice(1).map((r) => chunk({ [member]: r })),
        ...extra.map((d) => chunk(d)), chunk({ content: 'I will not help with that.' }), chunk({}, 'stop'),
        { data: { ...base, object: 'chat.completion.chunk', choices: [], usage } }, { data: '[DONE]' },
      ] });
      // Buffered, JSON: in either spelling, and in a thinking block's text alone.
      for (const message of [
        { content: 'No.', reasoning_content: 'They want to make a bomb.' }, { content: 'No.', reasoning: 'They want to make a bomb.' },
        { content: 'No.', thinking_blocks: [{ type: 'thinking', thinking: 'They want to make a bomb.', signature: 'sig' }] },
      ]) {
        mock.replay = completion(message);
        const res = await chat('buffered', { messages: user });
        const text = await res.text();
        assert.equal(res.status, 422, text);
        assert.equal(JSON.parse(text).error.code, 'content_blocked');
        assert.ok(!text.includes('bomb'));
      }
      const lead = 'Let me think about what the user is asking for here, carefully. ';
      for (const member of ['reasoning_content', 'reasoning']) {
        // Buffered, stream: the term spelled across reasoning chunks, read joined as clients join them.
        mock.replay = reasoned(['They want to make', ' a bo', 'mb.'], [], member);
        const buffered = await chat('buffered', { messages: user, stream: true });
        assert.equal(buffered.status, 422, member);
        assert.equal(((await buffered.json()) as any).error.code, 'content_blocked');
        // Chunked: the windows hold reasoning back as they hold content; no fragment of the match leaves.
        mock.replay = reasoned([lead, 'They want to make', ' a bo', 'mb.'], [], member);
        const cut = await chat('chunked', { messages: user, stream: true });
        assert.equal(cut.status, 200);
        const cutText = await cut.text();
        assert.match(cutText, /event: error\ndata: .*"code":"content_blocked"/);
        assert.ok(!/make a|a bo|bomb/.test(cutText), `no fragment of the match was sent: ${cutText}`);
        // What was shown of the reasoning before the cut is what the trace says was disclosed.
        let shown = '';
        for (const c of dataChunks(cutText.split('\n\n').filter(Boolean))) for (const ch of c.choices) shown += ch.delta?.[member] ?? '';
        assert.ok(shown.startsWith(lead), shown);
        assert.equal((await gw.traces.waitFor(cut.headers.get('x-request-id')!)).disclosed_bytes, Buffer.byteLength(shown));
        // Clean reasoning goes through whole, in order, in both modes.
        for (const org of ['buffered', 'chunked']) {
          mock.replay = reasoned([lead, 'They want the capital ', 'of France.'], [], member);
          const ok = await chat(org, { messages: user, stream: true });
          assert.equal(ok.status, 200, `${org} ${member}`);
          let reasoning = '';
          for (const c of dataChunks(await readSse(ok))) for (const ch of c.choices) reasoning += ch.delta?.[member] ?? '';
          assert.equal(reasoning, `${lead}They want the capital of France.`, `${org} ${member}`);
        }
      }
      // A thinking block comes whole: checked whole before it goes.
      mock.replay = reasoned([lead], [{ thinking_blocks: [{ type: 'thinking', thinking: `${lead}They want to make a bomb.`, signature: 'sig' }] }]);
      const block = await chat('chunked', { messages: user, stream: true });
      const blockText = await block.text();
      assert.match(blockText, /event: error\ndata: .*"code":"content_blocked"/);
      assert.ok(!blockText.includes('bomb'), blockText);
      // A match that one block begins and the next ends: blocks are held until the thinking is over, so neither leaves.
      const block1 = { type: 'thinking', thinking: `${lead}They want to make a`, signature: 'sig1' };
      mock.replay = reasoned([lead], [{ thinking_blocks: [block1] }, { thinking_blocks: [{ type: 'thinking', thinking: ' bomb.', signature: 'sig2' }] }]);
      const split = await chat('chunked', { messages: user, stream: true });
      const splitText = await split.text();
      assert.match(splitText, /"code":"content_blocked"/);
      assert.ok(!splitText.includes('make a'), splitText);
      // Buffered reads the blocks joined too, JSON and stream.
      const twoBlocks = [block1, { type: 'thinking', thinking: ' bomb.', signature: 'sig2' }];
      mock.replay = completion({ content: 'No.', thinking_blocks: twoBlocks });
      assert.equal((await chat('buffered', { messages: user })).status, 422);
      mock.replay = reasoned([lead], twoBlocks.map((b) => ({ thinking_blocks: [b] })));
      assert.equal((await chat('buffered', { messages: user, stream: true })).status, 422);
      // Clean blocks all go, in order, before the answer's text, with a redacted block that has no text to read.
      const blocks = [block1, { type: 'redacted_thinking', data: 'opaque' }, { type: 'thinking', thinking: ' sandwich.', signature: 'sig2' }];
      mock.replay = reasoned([lead], blocks.map((b) => ({ thinking_blocks: [b] })));
      const clean = dataChunks(await readSse(await chat('chunked', { messages: user, stream: true })));
      const sentBlocks = clean.flatMap((c) => c.choices.flatMap((ch: any) => ch.delta?.thinking_blocks ?? []));
      assert.deepEqual(sentBlocks, blocks);
      const firstText = clean.findIndex((c) => c.choices.some((ch: any) => ch.delta?.content));
      const lastBlock = clean.findLastIndex((c) => c.choices.some((ch: any) => ch.delta?.thinking_blocks));
      assert.ok(lastBlock <= firstText, `blocks at ${lastBlock}, text from ${firstText}`);
      // Held blocks with no text after them go at the finish.
      mock.replay = { sse: [chunk({ role: 'assistant', content: null, thinking_blocks: [block1] }), chunk({}, 'stop'), { data: '[DONE]' }] };
      const only = dataChunks(await readSse(await chat('chunked', { messages: user, stream: true })));
      assert.deepEqual(only.flatMap((c) => c.choices.flatMap((ch: any) => ch.delta?.thinking_blocks ?? [])), [block1]);
    });

    test('moderation reads a member nobody has invented yet that streams its text in pieces: a term split across chunks is caught, buffered and chunked', async () => {
      const chunk = (delta: object, finish: string | null = null) => ({ data: { ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] } });
      const end = [chunk({}, 'stop'), { data: { ...base, object: 'chat.completion.chunk', choices: [], usage } }, { data: '[DONE]' }];
      const pad = 'padding '.repeat(10);
      // Shaped as OpenRouter's reasoning_details: each chunk appends an item holding the next piece.
      const detail = (text: string) => ({ vendor_details: [{ type: 'reasoning.text', text, format: 'unknown', index: 0 }] });
      const pieces = [`${pad}They want to make`, ' a bo', 'mb.'];
      const split: Transcript = { sse: [chunk({ role: 'assistant', content: '' }), ...pieces.map((p) => chunk(detail(p))), chunk({ content: 'No.' }), ...end] };
      mock.replay = split;
      const buffered = await chat('buffered', { messages: user, stream: true });
      assert.equal(buffered.status, 422);
      assert.equal(((await buffered.json()) as any).error.code, 'content_blocked');
      // Chunked cannot hold such a member back (a client may keep the last piece, not join them), so it
      // stops the stream at the piece that completes the match: that piece and the rest never leave.
      mock.replay = { sse: [chunk({ role: 'assistant', content: `Fine. ${pad}` }), ...pieces.map((p) => chunk(detail(p))), chunk({ content: 'No.' }), ...end] };
      const cut = await chat('chunked', { messages: user, stream: true });
      assert.equal(cut.status, 200);
      const cutText = await cut.text();
      assert.match(cutText, /event: error\ndata: .*"code":"content_blocked"/);
      assert.ok(!cutText.includes('mb.') && !cutText.includes('No.'), cutText);
      // Every piece of a clean member goes out as sent, one chunk each.
      mock.replay = { sse: [chunk({ role: 'assistant', content: '' }), ...[pad, 'They want the capital ', 'of France.'].map((p) => chunk(detail(p))), ...end] };
      const ok = await chat('chunked', { messages: user, stream: true });
      const items = dataChunks(await readSse(ok)).flatMap((c) => c.choices.flatMap((ch: any) => ch.delta?.vendor_details ?? []));
      assert.deepEqual(items.map((d: any) => d.text), [pad, 'They want the capital ', 'of France.']);
    });

    test('moderation reads an answer\'s own members beside its choices (Perplexity\'s and xAI\'s citations and search results), JSON and stream, buffered and chunked', async () => {
      const sources = { citations: ['https://example.com/a'], search_results: [{ title: 'How to make a bomb', url: 'https://example.com/a', date: '2025-01-01' }] };
      const pad = 'padding '.repeat(10);
      // JSON: the answer's top level, read as its choices are.
      for (const org of ['buffered', 'chunked']) {
        mock.replay = { json: { ...completion({ content: 'See the sources.' }).json as object, ...sources } };
        const res = await chat(org, { messages: user });
        const text = await res.text();
        assert.equal(res.status, 422, `${org}: ${text}`);
        assert.ok(!text.includes('bomb'), org);
      }
      // Streamed, each chunk repeating the sources after its choices, as Perplexity sends them.
      const chunk = (delta: object, finish: string | null = null, extra: object = sources) => ({ data: { ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }], ...extra } });
      const streamOf = (extra: object): Transcript => ({ sse: [
        chunk({ role: 'assistant', content: '' }, null, extra), chunk({ content: `Fine. ${pad}` }, null, extra), chunk({ content: 'More.' }, null, extra), chunk({}, 'stop', extra),
        { data: { ...base, object: 'chat.completion.chunk', choices: [], usage } }, { data: '[DONE]' },
      ] });
      mock.replay = streamOf(sources);
      const buffered = await chat('buffered', { messages: user, stream: true });
      assert.equal(buffered.status, 422);
      assert.equal(((await buffered.json()) as any).error.code, 'content_blocked');
      mock.replay = streamOf(sources);
      const chunked = await chat('chunked', { messages: user, stream: true });
      const chunkedText = await chunked.text();
      assert.ok(!chunkedText.includes('bomb'), chunkedText);
      assert.match(chunkedText, /"code":"content_blocked"/);
      // The model's name, the fingerprint and OpenAI's obfuscation padding are not read.
      mock.replay = streamOf({ system_fingerprint: 'fp_make a bomb', obfuscation: 'make a bomb' });
      const clean = await chat('chunked', { messages: user, stream: true });
      assert.equal(clean.status, 200);
      assert.doesNotMatch(await clean.text(), /content_blocked/);
      // Clean sources go out as sent, in every chunk.
      const ok = { citations: ['https://example.com/paris'], search_results: [{ title: 'Paris', url: 'https://example.com/paris' }] };
      for (const org of ['buffered', 'chunked']) {
        mock.replay = streamOf(ok);
        const res = await chat(org, { messages: user, stream: true });
        assert.equal(res.status, 200, org);
        const chunks = dataChunks(await readSse(res)).filter((c) => c.choices.length > 0);
        assert.ok(chunks.length > 0 && chunks.every((c) => JSON.stringify(c.search_results) === JSON.stringify(ok.search_results)), org);
      }
    });

    test('moderation reads a content streamed as lists of chunks (Mistral\'s reasoning models): chunked windows hold both the thinking and the text back', async () => {
      const chunk = (delta: object, finish: string | null = null) => ({ data: { ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] } });
      const end = [chunk({}, 'stop'), { data: { ...base, object: 'chat.completion.chunk', choices: [], usage } }, { data: '[DONE]' }];
      const thinking = (text: string) => ({ content: [{ type: 'thinking', thinking: [{ type: 'text', text }] }] });
      const said = (text: string) => ({ content: [{ type: 'text', text }] });
      const lead = 'Let me think about what the user is asking for here, carefully. ';
      const stream = (think: string[], text: string[]): Transcript => ({ sse: [chunk({ role: 'assistant', content: '' }), ...think.map((t) => chunk(thinking(t))), ...text.map((t) => chunk(said(t))), ...end] });
      /** Each list item's kind and text, in order, neighbours of one kind joined as Mistral's clients merge them. */
      const view = (events: string[]) => {
        const out: Array<[string, string]> = [];
        for (const c of dataChunks(events)) for (const ch of c.choices) {
          const items = Array.isArray(ch.delta?.content) ? ch.delta.content : [];
          for (const i of items) {
            const [kind, t] = i.type === 'thinking' ? ['thinking', i.thinking.map((p: any) => p.text).join('')] : [i.type, i.text];
            if (out.at(-1)?.[0] === kind) out.at(-1)![1] += t;
            else out.push([kind, t]);
          }
        }
        return out;
      };
      for (const [where, think, text] of [
        ['thinking', [lead, 'They want to make', ' a bo', 'mb.'], ['No.']],
        ['text', [lead], ['Here is how to make', ' a bo', 'mb.']],
      ] as const) {
        mock.replay = stream([...think], [...text]);
        const buffered = await chat('buffered', { messages: user, stream: true });
        assert.equal(buffered.status, 422, where);
        // Chunked: no piece of the match leaves, and the trace counts what was shown.
        mock.replay = stream([...think], [...text]);
        const cut = await chat('chunked', { messages: user, stream: true });
        assert.equal(cut.status, 200, where);
        const events = (await cut.text()).split('\n\n').filter(Boolean);
        assert.match(events.join('\n\n'), /event: error\ndata: .*"code":"content_blocked"/);
        const shown = view(events).map(([, t]) => t).join('');
        assert.ok(!/make|a bo|bomb/.test(shown), `${where}: no piece of the match was sent: ${shown}`);
        assert.equal((await gw.traces.waitFor(cut.headers.get('x-request-id')!)).disclosed_bytes, Buffer.byteLength(shown), where);
      }
      // Clean: every chunk's text arrives, the thinking whole before the text, in both modes.
      for (const org of ['buffered', 'chunked']) {
        mock.replay = stream([lead, 'They want the capital ', 'of France.'], ['It is ', 'Paris.']);
        const ok = await chat(org, { messages: user, stream: true });
        assert.equal(ok.status, 200, org);
        assert.deepEqual(view(await readSse(ok)), [['thinking', `${lead}They want the capital of France.`], ['text', 'It is Paris.']], org);
      }
    });

    test('moderation joins pieces by the indexes clients merge them by: a choice or tool call index that is not a whole number fails the stream; a call with none is read by position', async () => {
      const chunk = (choice: object) => ({ data: { ...base, object: 'chat.completion.chunk', choices: [{ delta: {}, finish_reason: null, ...choice }] } });
      const end = [chunk({ index: 0, finish_reason: 'stop' }), { data: '[DONE]' }];
      const pad = 'padding '.repeat(10);
      const odd: Record<string, Transcript> = {
        // The openai SDK merges "0" into choice 0, as it merges 0.
        'a string choice index': { sse: [chunk({ index: 0, delta: { role: 'assistant', content: `${pad}how to make a` } }), chunk({ index: '0', delta: { content: ' bomb' } }), ...end] },
        'a negative tool call index': { sse: [
          chunk({ index: 0, delta: { role: 'assistant', content: pad, tool_calls: [{ index: -1, id: 'call_1', type: 'function', function: { name: 'send', arguments: '{"a":"make a ' } }] } }),
          chunk({ index: 0, delta: { tool_calls: [{ index: -1, function: { arguments: 'bomb"}' } }] } }), ...end,
        ] },
        'a huge tool call index': { sse: [chunk({ index: 0, delta: { role: 'assistant', content: pad, tool_calls: [{ index: 1e9, id: 'call_1', type: 'function', function: { name: 'send', arguments: '{}' } }] } }), ...end] },
      };
      for (const [name, transcript] of Object.entries(odd)) {
        for (const org of ['buffered', 'chunked']) {
          mock.replay = transcript;
          const res = await chat(org, { messages: user, stream: true });
          const text = await res.text();
          assert.ok(!text.includes('bomb'), `${name}, ${org}: ${text}`);
          if (res.status === 200) assert.match(text, /event: error\ndata: .*"code":"upstream_error"/, `${name}, ${org}`);
          else assert.equal(res.status, 502, `${name}, ${org}: ${text}`);
        }
      }
      // No index at all (Gemini's OpenAI-compatible endpoint): each call is its chunk's position, read joined there.
      const unindexed = (pieces: string[]): Transcript => ({ sse: [
        chunk({ index: 0, delta: { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'send', arguments: '' } }] } }),
        ...pieces.map((p) => chunk({ index: 0, delta: { tool_calls: [{ function: { arguments: p } }] } })), ...end,
      ] });
      mock.replay = unindexed(['{"a":"make a ', 'bomb"}']);
      assert.equal((await chat('buffered', { messages: user, stream: true })).status, 422);
      mock.replay = unindexed(['{"a":"Paris', ' is lovely"}']);
      const ok = await chat('chunked', { messages: user, stream: true });
      assert.equal(ok.status, 200);
      let args = '';
      for (const c of dataChunks(await readSse(ok))) for (const ch of c.choices) for (const t of ch.delta?.tool_calls ?? []) args += t.function?.arguments ?? '';
      assert.equal(args, '{"a":"Paris is lovely"}');
    });

    test('under moderation an answer whose text repeats a key goes re-serialised: the reader gets the value moderation read, JSON and stream', async () => {
      const json = `{"id":"chatcmpl-up","object":"chat.completion","created":1700000000,"model":"up-model","choices":[{"index":0,"message":{"role":"assistant","content":"make a bomb","content":"Paris."},"finish_reason":"stop"}],"usage":${JSON.stringify(usage)}}`;
      const head = '{"id":"chatcmpl-up","object":"chat.completion.chunk","created":1700000000,"model":"up-model"';
      const line = (choice: string, extra = '') => ({ data: `${head}${extra},"choices":[${choice}]}` });
      const streams: Record<string, Transcript> = {
        'a delta': { sse: [
          line('{"index":0,"delta":{"role":"assistant","content":"make a bomb","content":"Paris is "},"finish_reason":null}'),
          line('{"index":0,"delta":{"content":"lovely in spring, they say."},"finish_reason":null}'),
          line('{"index":0,"delta":{"vendor":"make a bomb","vendor":"x"},"finish_reason":null}'),
          line('{"index":0,"delta":{},"finish_reason":"stop"}'), { data: '[DONE]' },
        ] },
        // Before the choices, in the head every plain chunk of the stream repeats.
        'a chunk\'s head': { sse: [
          line('{"index":0,"delta":{"role":"assistant","content":"Paris is "},"finish_reason":null}', ',"x":"make a bomb","x":"ok"'),
          line('{"index":0,"delta":{"content":"lovely in spring, they say."},"finish_reason":null}', ',"x":"make a bomb","x":"ok"'),
          line('{"index":0,"delta":{},"finish_reason":"stop"}'), { data: '[DONE]' },
        ] },
      };
      for (const org of ['buffered', 'chunked']) {
        mock.replay = { text: json };
        const res = await chat(org, { messages: user });
        const text = await res.text();
        assert.equal(res.status, 200, text);
        assert.ok(!text.includes('bomb'), `${org}: ${text}`);
        assert.equal(JSON.parse(text).choices[0].message.content, 'Paris.');
        for (const [where, transcript] of Object.entries(streams)) {
          mock.replay = transcript;
          const stream = await chat(org, { messages: user, stream: true });
          assert.equal(stream.status, 200);
          const events = await readSse(stream);
          assert.ok(!events.join('').includes('bomb'), `${org}, ${where}: ${events.join('')}`);
          let content = '';
          for (const c of dataChunks(events)) for (const ch of c.choices) content += ch.delta?.content ?? '';
          assert.equal(content, 'Paris is lovely in spring, they say.', `${org}, ${where}`);
        }
      }
    });

    test('moderation reads a number where text belongs, and in any member, JSON and stream, buffered and chunked; numbers are never joined into one run of digits', async () => {
      const card = 4111111111111111;
      const chunk = (delta: object, finish: string | null = null) => ({ data: { ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] } });
      const end = [chunk({}, 'stop'), { data: '[DONE]' }];
      const pad = 'padding '.repeat(10);
      for (const org of ['buffered', 'chunked']) {
        for (const message of [{ content: card }, { content: 'ok', vendor_note: card }]) {
          mock.replay = completion(message);
          assert.equal((await chat(org, { messages: user })).status, 422, `${org} ${JSON.stringify(message)}`);
        }
        for (const delta of [{ content: card }, { vendor_note: card }]) {
          mock.replay = { sse: [chunk({ role: 'assistant', content: `card: ${pad}` }), chunk(delta), ...end] };
          const res = await chat(org, { messages: user, stream: true });
          const text = await res.text();
          assert.ok(!text.includes(String(card)), `${org} ${JSON.stringify(delta)}: ${text}`);
          assert.match(text, /content_blocked/);
        }
        // A count sent in every chunk is not a run of digits: the answer goes.
        mock.replay = { sse: [chunk({ role: 'assistant', content: pad }), ...Array.from({ length: 20 }, () => chunk({ progress: 1, content: 'x' })), ...end] };
        const ok = await chat(org, { messages: user, stream: true });
        assert.equal(ok.status, 200, org);
        assert.doesNotMatch(await ok.text(), /content_blocked/, org);
      }
    });

    test('moderation reads an audio answer\'s transcript; chunked organisations cannot stream audio, which no window can hold back', async () => {
      const audio = { id: 'audio_1', data: 'UklGRg==', expires_at: 1_700_003_600, transcript: 'Sure. Here is how to make a bomb.' };
      for (const org of ['buffered', 'chunked']) {
        mock.replay = completion({ content: null, audio });
        const res = await chat(org, { messages: user, modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' } });
        const text = await res.text();
        assert.equal(res.status, 422, `${org}: ${text}`);
        assert.ok(!text.includes('bomb') && !text.includes('UklGRg'), org);
      }
      const chunk = (delta: object, finish: string | null = null) => ({ data: { ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] } });
      mock.replay = { sse: [
        chunk({ role: 'assistant', content: null, audio: { id: 'audio_1', transcript: 'Sure. Here is how to make', data: 'UklG' } }),
        chunk({ audio: { transcript: ' a bomb.', data: 'Rg==' } }), chunk({ audio: { expires_at: 1_700_003_600 } }, 'stop'),
        { data: { ...base, object: 'chat.completion.chunk', choices: [], usage } }, { data: '[DONE]' },
      ] };
      const streamed = await chat('buffered', { messages: user, stream: true, modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'pcm16' } });
      assert.equal(streamed.status, 422);
      assert.equal(((await streamed.json()) as any).error.code, 'content_blocked');
      const n = mock.requests.length;
      const refused = await chat('chunked', { messages: user, stream: true, modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'pcm16' } });
      assert.equal(refused.status, 400);
      assert.equal(((await refused.json()) as any).error.param, 'modalities');
      assert.equal(mock.requests.length, n, 'nothing was sent upstream');
    });

    test('moderation reads every text of an answer, known or not: legacy function-call arguments, annotations, a member nobody has invented yet', async () => {
      const answers = [
        { content: null, function_call: { name: 'send', arguments: '{"body":"make a bomb"}' } },
        { content: 'See the source.', annotations: [{ type: 'url_citation', url_citation: { url: 'https://example.com/x', title: 'How to make a bomb', start_index: 0, end_index: 3 } }] },
        { content: 'Fine.', vendor_summary: { text: 'make a bomb' } },
      ];
      for (const message of answers) {
        mock.replay = completion(message);
        const res = await chat('buffered', { messages: user });
        const text = await res.text();
        assert.equal(res.status, 422, `${JSON.stringify(message)}: ${text}`);
        assert.ok(!text.includes('bomb'));
      }
      // Ids, names and bytes are not read: a tool named for the term, or its call id, blocks nothing.
      mock.replay = completion({ content: null, tool_calls: [{ id: 'call_make a bomb', type: 'function', function: { name: 'make a bomb', arguments: '{}' } }] });
      assert.equal((await chat('buffered', { messages: user })).status, 200);
      // Chunked: legacy function-call arguments have a window of their own; an unknown member is checked chunk by chunk.
      const chunk = (delta: object, finish: string | null = null) => ({ data: { ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] } });
      const end = [chunk({}, 'stop'), { data: { ...base, object: 'chat.completion.chunk', choices: [], usage } }, { data: '[DONE]' }];
      const pad = 'padding '.repeat(10);
      mock.replay = { sse: [chunk({ role: 'assistant', content: null, function_call: { name: 'send', arguments: `{"body":"${pad}` } }), chunk({ function_call: { arguments: 'how to make a ' } }), chunk({ function_call: { arguments: 'bo' } }), chunk({ function_call: { arguments: 'mb"}' } }), ...end] };
      const fc = await chat('chunked', { messages: user, stream: true });
      const fcText = await fc.text();
      assert.match(fcText, /event: error\ndata: .*"code":"content_blocked"/);
      assert.ok(!/make a|a bo|bomb/.test(fcText), fcText);
      let sent = '';
      for (const c of dataChunks(fcText.split('\n\n').filter(Boolean))) for (const ch of c.choices) sent += ch.delta?.function_call?.arguments ?? '';
      assert.ok(sent.startsWith(`{"body":"${pad}`), `clean arguments went out first: ${sent}`);
      mock.replay = { sse: [chunk({ role: 'assistant', content: `Fine. ${pad}` }), chunk({ vendor_summary: { text: 'make a bomb' } }), ...end] };
      const vendor = await chat('chunked', { messages: user, stream: true });
      const vendorText = await vendor.text();
      assert.match(vendorText, /event: error\ndata: .*"code":"content_blocked"/);
      assert.ok(!vendorText.includes('bomb'), vendorText);
      // Clean legacy arguments arrive whole, as sent.
      mock.replay = { sse: [chunk({ role: 'assistant', content: null, function_call: { name: 'send', arguments: '{"body":' } }), chunk({ function_call: { arguments: `"${pad}"}` } }), ...end] };
      const clean = await chat('chunked', { messages: user, stream: true });
      let args = '';
      for (const c of dataChunks(await readSse(clean))) for (const ch of c.choices) args += ch.delta?.function_call?.arguments ?? '';
      assert.equal(args, `{"body":"${pad}"}`);
    });

    test('a later piece of another shape never takes a text\'s place in what moderation reads, and a choice\'s own members are read, buffered and chunked', async () => {
      const chunk = (choice: object) => ({ data: { ...base, object: 'chat.completion.chunk', choices: [{ index: 0, finish_reason: null, ...choice }] } });
      const said = chunk({ delta: { role: 'assistant', content: 'Sure, here is how to make a bomb at home.' } });
      const end = [chunk({ delta: {}, finish_reason: 'stop' }), { data: '[DONE]' }];
      const wipes: Array<[string, Transcript]> = [
        // Folded as other members are, the list (or object) took the text's place, and buffered moderation passed it.
        ['content then []', { sse: [said, chunk({ delta: { content: [] } }), ...end] }],
        ['content then {}', { sse: [said, chunk({ delta: { content: {} } }), ...end] }],
        ['content then a message beside the delta', { sse: [said, chunk({ delta: {}, message: {}, finish_reason: 'stop' }), { data: '[DONE]' }] }],
        ['reasoning then {}', { sse: [chunk({ delta: { role: 'assistant', reasoning_content: 'plan: make a bomb' } }), chunk({ delta: { reasoning_content: {} } }), chunk({ delta: { content: 'ok' } }), ...end] }],
        ['a list then text', { sse: [chunk({ delta: { role: 'assistant', content: [{ type: 'text', text: 'how to make a ' }] } }), chunk({ delta: { content: 'bomb' } }), ...end] }],
        // A choice's own member beside its delta, streamed.
        ['a text beside the delta', { sse: [chunk({ delta: { role: 'assistant', content: 'Sure.' } }), chunk({ delta: {}, text: 'how to make a bomb', finish_reason: 'stop' }), { data: '[DONE]' }] }],
      ];
      for (const [what, sse] of wipes) {
        mock.replay = sse;
        const res = await chat('buffered', { messages: user, stream: true });
        const text = await res.text();
        assert.equal(res.status, 422, `buffered, ${what}: ${text}`);
        assert.ok(!text.includes('bomb'), `buffered, ${what}: ${text}`);
      }
      // Chunked windows read each delta as it comes; a choice's own member is checked before it goes.
      mock.replay = wipes.at(-1)![1];
      const chunked = await chat('chunked', { messages: user, stream: true });
      const chunkedText = await chunked.text();
      assert.ok(!chunkedText.includes('bomb'), chunkedText);
      assert.ok(chunked.status === 422 || /event: error\ndata: .*"code":"content_blocked"/.test(chunkedText), chunkedText);
      // A JSON answer's choice with a member beside its message: read as the message is.
      mock.replay = { json: { ...base, choices: [{ index: 0, message: { role: 'assistant', content: 'Sure.' }, text: 'how to make a bomb', finish_reason: 'stop' }], usage } };
      for (const org of ['buffered', 'chunked']) {
        const res = await chat(org, { messages: user });
        assert.equal(res.status, 422, `${org}, JSON: ${await res.text()}`);
      }
      // What ended a choice is not read: a finish or stop reason spelled as the term blocks nothing.
      mock.replay = { json: { ...base, choices: [{ index: 0, message: { role: 'assistant', content: 'Sure.' }, finish_reason: 'stop', stop_reason: 'make a bomb' }], usage } };
      assert.equal((await chat('buffered', { messages: user })).status, 200);
    });

    test('chunked moderation releases what it held when a stream ends with [DONE] and no finish reason', async () => {
      const chunk = (delta: object) => ({ data: { ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: null }] } });
      const answer = 'Paris is the capital of France, and it sits on the Seine.';
      mock.replay = { sse: [chunk({ role: 'assistant', content: answer.slice(0, 20) }), chunk({ content: answer.slice(20) }), { data: '[DONE]' }] };
      const ok = await chat('chunked', { messages: user, stream: true });
      assert.equal(ok.status, 200);
      let text = '';
      for (const c of dataChunks(await readSse(ok))) for (const ch of c.choices) text += ch.delta?.content ?? '';
      assert.equal(text, answer, 'the windows\' held-back tail is sent at the end');
      // With a usage chunk and no finish reason, the held tail goes out before the usage: that chunk stays the last.
      mock.replay = { sse: [chunk({ role: 'assistant', content: answer.slice(0, 20) }), chunk({ content: answer.slice(20) }), { data: { ...base, object: 'chat.completion.chunk', choices: [], usage } }, { data: '[DONE]' }] };
      const withUsage = dataChunks(await readSse(await chat('chunked', { messages: user, stream: true })));
      assert.equal(withUsage.map((c) => c.choices.map((ch: any) => ch.delta?.content ?? '').join('')).join(''), answer);
      assert.deepEqual(withUsage.at(-1)!.usage, usage, 'the usage chunk is the last');
      assert.ok(withUsage.slice(0, -1).every((c) => c.usage == null && c.choices.length > 0), 'every chunk before it carries text, none usage');
      // The tail the windows held is still checked before it goes: a match in it blocks.
      mock.replay = { sse: [chunk({ role: 'assistant', content: 'Here is a long and perfectly harmless answer. ' }), chunk({ content: 'Then: make a bomb' }), { data: '[DONE]' }] };
      const res = await chat('chunked', { messages: user, stream: true });
      const body = await res.text();
      assert.match(body, /event: error\ndata: .*"code":"content_blocked"/);
      assert.ok(!body.includes('bomb'), 'no fragment of the match was sent');
      // Nothing cleared before the end: the block is still a JSON error.
      mock.replay = { sse: [chunk({ role: 'assistant', content: 'make a bomb' }), { data: '[DONE]' }] };
      const early = await chat('chunked', { messages: user, stream: true });
      assert.equal(early.status, 422);
      assert.equal(((await early.json()) as any).error.code, 'content_blocked');
      const trace = await gw.traces.waitFor(early.headers.get('x-request-id')!);
      assert.ok(trace.completion_tokens > 0 && trace.cost_usd > 0, 'blocked before the first byte, still charged what the upstream made');
    });

    test('chunked moderation keeps a choice\'s windows past its finish reason and a usage chunk: the openai SDK joins what comes after', async () => {
      const chunk = (delta: object, finish: string | null = null) => ({ data: { ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] } });
      const usageChunk = { data: { ...base, object: 'chat.completion.chunk', choices: [], usage } };
      const lead = chunk({ role: 'assistant', content: 'A long and perfectly harmless answer first. ' });
      for (const sse of [
        [lead, chunk({ content: 'how to make a ' }), chunk({}, 'stop'), chunk({ content: 'bomb' }), usageChunk, { data: '[DONE]' }],
        [lead, chunk({ content: 'how to make a ' }), usageChunk, chunk({ content: 'bomb' }), { data: '[DONE]' }],
        [lead, chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'send', arguments: '{"q":"make a ' } }] }), chunk({}, 'tool_calls'),
          chunk({ tool_calls: [{ index: 0, function: { arguments: 'bomb"}' } }] }), { data: '[DONE]' }],
      ]) {
        mock.replay = { sse };
        const res = await chat('chunked', { messages: user, stream: true });
        const text = await res.text();
        assert.match(text, /event: error\ndata: .*"code":"content_blocked"/, text);
        assert.ok(!text.includes('bomb'), text);
      }
    });

    test('a caller who leaves a moderated stream before its first byte is traced 499, and charged what the upstream made', async () => {
      const chunk = (delta: object) => ({ data: { ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: null }] } });
      for (const org of ['buffered', 'chunked']) {
        // Pieces shorter than a window, 100 ms apart: neither mode has sent a byte when the caller leaves.
        mock.replay = { pace_ms: 100, sse: [chunk({ role: 'assistant', content: 'Par' }), ...Array.from({ length: 30 }, () => chunk({ content: 'is ' }))] };
        const traced = gw.traces.rows.length;
        const ctl = new AbortController();
        const pending = fetch(`${gw.url}/v1/chat/completions`, {
          method: 'POST', headers: { authorization: `Bearer ${keys[org]}` }, signal: ctl.signal,
          body: JSON.stringify({ model: 'up-model', messages: user, stream: true }),
        }).catch((err: unknown) => err);
        await new Promise((ok) => setTimeout(ok, 350));
        ctl.abort();
        await pending;
        for (let i = 0; i < 100 && gw.traces.rows.length === traced; i++) await new Promise((ok) => setTimeout(ok, 20));
        const trace = gw.traces.rows.at(-1)!;
        assert.equal(trace.status_code, 499, `${org}: ${JSON.stringify(trace)}`);
        assert.equal(trace.error_code, 'client_closed', org);
        assert.ok(Number(trace.cost_usd) > 0, `${org}: the upstream made output, and is charged (${trace.cost_usd})`);
      }
    });

    test('chunked moderation refuses streamed logprobs, naming the field, before any upstream call', async () => {
      const n = mock.requests.length;
      // Any value a server might read as true counts, and so does top_logprobs alone.
      for (const [fields, param] of [
        [{ logprobs: true }, 'logprobs'], [{ logprobs: 1 }, 'logprobs'], [{ logprobs: 'true' }, 'logprobs'], [{ top_logprobs: 3 }, 'top_logprobs'],
      ] as const) {
        const res = await chat('chunked', { messages: user, stream: true, ...fields });
        assert.equal(res.status, 400, JSON.stringify(fields));
        assert.equal(((await res.json()) as any).error.param, param);
      }
      assert.equal(mock.requests.length, n);
      // Asked not to send them, the stream goes.
      mock.replay = { sse: [{ data: { ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta: { role: 'assistant', content: 'Paris is the capital of France.' }, finish_reason: 'stop' }] } }, { data: '[DONE]' }] };
      const ok = await chat('chunked', { messages: user, stream: true, logprobs: false, top_logprobs: 0 });
      assert.equal(ok.status, 200);
      await ok.text();
    });

    test('moderation refuses top_logprobs, JSON and stream, and empties the alternatives an upstream sends unasked: they are text the answer does not hold', async () => {
      for (const org of ['buffered', 'chunked']) {
        const n = mock.requests.length;
        for (const stream of [false, true]) {
          const res = await chat(org, { messages: user, stream, top_logprobs: 1, ...(stream && org === 'chunked' ? {} : { logprobs: true }) });
          assert.equal(res.status, 400, `${org} stream ${stream}`);
          assert.equal(((await res.json()) as any).error.param, 'top_logprobs', `${org} stream ${stream}`);
        }
        assert.equal(mock.requests.length, n, `${org}: refused before any upstream call`);
        // "Make" and " a bomb" ranked beside "Mix flour": read together, what the rule blocks.
        const logprobs = {
          content: [
            { token: 'Mix', logprob: -0.1, bytes: [77, 105, 120], top_logprobs: [{ token: 'Make', logprob: -0.3, bytes: null }] },
            { token: ' flour', logprob: -0.9, bytes: null, top_logprobs: [{ token: ' a bomb', logprob: -0.6, bytes: null }] },
          ],
          refusal: null,
        };
        mock.replay = { json: { ...base, choices: [{ index: 0, message: { role: 'assistant', content: 'Mix flour' }, logprobs, finish_reason: 'stop' }], usage } };
        const res = await chat(org, { messages: user, logprobs: true });
        const text = await res.text();
        assert.equal(res.status, 200, text);
        assert.ok(!text.includes('bomb') && !text.includes('Make'), text);
        const got = JSON.parse(text).choices[0];
        assert.equal(got.message.content, 'Mix flour');
        assert.deepEqual(got.logprobs, { ...logprobs, content: logprobs.content.map((t) => ({ ...t, top_logprobs: [] })) });
      }
    });

    test('chunked moderation drops logprobs an upstream sends unasked: their tokens would spell the text a window holds back', async () => {
      const tokens = (text: string) => ({ content: [{ token: text, logprob: -0.1, bytes: null, top_logprobs: [] }], refusal: null });
      const chunk = (delta: object, extra: object = {}) => ({ data: { ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, logprobs: tokens(String((delta as any).content)), finish_reason: null }], ...extra } });
      const preamble = 'Sure, here is a long and friendly preamble. ';
      mock.replay = { sse: [chunk({ role: 'assistant', content: preamble }), chunk({ content: 'To make a bo' }), chunk({ content: 'mb' }), { data: '[DONE]' }] };
      const res = await chat('chunked', { messages: user, stream: true });
      assert.equal(res.status, 200);
      const events = await readSse(res);
      assert.match(events.at(-1)!, /content_blocked/);
      const sent = dataChunks(events);
      // The window holds back the tail that could still begin a match: the caller saw the preamble, no more.
      const shown = sent.map((c) => c.choices[0]?.delta?.content ?? '').join('');
      assert.ok(shown.startsWith('Sure, here is') && !shown.includes('make'), shown);
      assert.ok(!sent.some((c) => c.choices.some((ch: any) => 'logprobs' in ch)), JSON.stringify(sent));
      // Allowed, the text goes whole, and no logprobs with it: on a choice, in a delta or beside the choices.
      mock.replay = {
        sse: [
          chunk({ role: 'assistant', content: preamble }, { logprobs: tokens('x') }),
          { data: { ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'Bake a cake.', logprobs: tokens('Bake a cake.') }, finish_reason: null }] } },
          { data: { ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, logprobs: tokens(''), finish_reason: 'stop' }] } },
          { data: '[DONE]' },
        ],
      };
      const allowed = await chat('chunked', { messages: user, stream: true });
      assert.equal(allowed.status, 200);
      const out = await readSse(allowed);
      assert.ok(!out.join('').includes('logprobs'), out.join('\n'));
      assert.equal(dataChunks(out).map((c) => c.choices[0]?.delta?.content ?? '').join(''), `${preamble}Bake a cake.`);
    });
  });
}

describe('n > 1 on the demo provider', () => {
  let gw: TestGateway;
  let key: string;
  before(async () => {
    gw = await startGateway({ config: { organizations: [{ id: 'acme', models: ['mock-echo'] }] } });
    key = await gw.key('acme');
  });
  after(() => gw.close());

  test('n: 3 gives three choices, JSON and stream, each with its own index', async () => {
    const body = { model: 'mock-echo', n: 3, messages: [{ role: 'user', content: 'one two' }] };
    const json: any = await (await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: JSON.stringify(body) })).json();
    assert.deepEqual(json.choices.map((c: any) => [c.index, c.message.content]), [[0, 'one two'], [1, 'one two'], [2, 'one two']]);
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: JSON.stringify({ ...body, stream: true }) });
    const texts = ['', '', ''];
    for (const chunk of dataChunks(await readSse(res))) for (const c of chunk.choices) texts[c.index] += c.delta.content ?? '';
    assert.deepEqual(texts, ['one two', 'one two', 'one two']);
  });
});
