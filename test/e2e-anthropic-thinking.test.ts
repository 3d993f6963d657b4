// Claude's signed thinking through a streamed chat answer: every thinking and
// redacted_thinking block reaches the caller once, in order, whatever merges
// the stream (the openai SDK assigns an unknown delta member, LangChain and
// sluice concatenate arrays, a raw reader reads each delta), so a tool loop
// sends Claude back every block, as Anthropic requires. Unmoderated, chunked
// and buffered streams end the same as the JSON answer.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { ChatOpenAI } from '@langchain/openai';
import { AIMessageChunk } from '@langchain/core/messages';
import { concat } from '@langchain/core/utils/stream';
import { startAnthropicMock, ANTHROPIC_MOCK_KEY } from './mocks/anthropic-mock.js';
import type { MockUpstream, Transcript } from './mocks/mock-server.js';
import { startGateway, type TestGateway } from './helpers/gateway.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

const CLAUDE = 'claude-sonnet-4-20250514';
const tools: OpenAI.Chat.ChatCompletionFunctionTool[] = ['get_weather', 'get_time'].map((name) => ({
  type: 'function', function: { name, parameters: { type: 'object', properties: { city: { type: 'string' } } } },
}));

type Block =
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string }
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };

const A = { type: 'thinking' as const, thinking: 'Rome first.', signature: 'sig-A' };
const R = { type: 'redacted_thinking' as const, data: 'opaque-R' };
const B = { type: 'thinking' as const, thinking: ' Then the time.', signature: 'sig-B' };
const C = { type: 'thinking' as const, thinking: ' Now Oslo.', signature: 'sig-C' };
const D = { type: 'thinking' as const, thinking: ' Its time zone, then, which Oslo keeps all winter.', signature: 'sig-D' };
const call = (n: number, name: string, city: string) => ({ type: 'tool_use' as const, id: `toolu_0${n}`, name, input: { city } });

/** Anthropic's JSON answer and its SSE stream for the same content blocks. */
function answer(content: Block[]): { json: Transcript; sse: Transcript } {
  const usage = { input_tokens: 10, output_tokens: 20 };
  const json = { json: { id: 'msg_01', type: 'message', role: 'assistant', model: CLAUDE, content, stop_reason: 'tool_use', stop_sequence: null, usage } };
  const ev = (type: string, data: object = {}) => ({ event: type, data: { type, ...data } });
  const events = [ev('message_start', { message: { ...json.json, id: 'msg_02', content: [], stop_reason: null, usage: { input_tokens: 10, output_tokens: 1 } } })];
  content.forEach((b, index) => {
    const delta = (d: object) => events.push(ev('content_block_delta', { index, delta: d }));
    if (b.type === 'thinking') {
      events.push(ev('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } }));
      // The text in two pieces, then the signature that closes the block.
      const half = Math.ceil(b.thinking.length / 2);
      delta({ type: 'thinking_delta', thinking: b.thinking.slice(0, half) });
      delta({ type: 'thinking_delta', thinking: b.thinking.slice(half) });
      delta({ type: 'signature_delta', signature: b.signature });
    } else if (b.type === 'redacted_thinking') {
      events.push(ev('content_block_start', { index, content_block: b }));
    } else if (b.type === 'text') {
      events.push(ev('content_block_start', { index, content_block: { type: 'text', text: '' } }));
      delta({ type: 'text_delta', text: b.text });
    } else {
      events.push(ev('content_block_start', { index, content_block: { ...b, input: {} } }));
      delta({ type: 'input_json_delta', partial_json: JSON.stringify(b.input) });
    }
    events.push(ev('content_block_stop', { index }));
  });
  events.push(ev('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 20 } }));
  events.push(ev('message_stop'));
  return { json, sse: { sse: events } };
}

/** Thinking, redacted thinking and thinking again before one call. */
const SIGNED = answer([A, R, B, call(1, 'get_weather', 'Rome')]);
/**
 * Interleaved thinking: Claude thinks again after its first tool_use, and after
 * a text, before the next call. The arguments and the text are longer than a
 * chunked moderation window holds back.
 */
const INTERLEAVED = answer([A, call(1, 'get_weather', 'Rome, Lazio, Italy'), R, C, { type: 'text', text: 'And the time in Oslo, Norway.' }, D, call(2, 'get_time', 'Oslo, Norway')]);

/** The data lines of a raw chat stream, parsed. */
async function rawChunks(url: string, key: string, body: object): Promise<any[]> {
  const r = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ ...body, stream: true }) });
  assert.equal(r.status, 200);
  return (await r.text()).split('\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)));
}

describe('Anthropic signed thinking in a chat stream', () => {
  let claude: MockUpstream;
  let gw: TestGateway;
  const clients: Record<'acme' | 'chunked' | 'buffered', OpenAI> = {} as never;
  let key: string;

  before(async () => {
    claude = await startAnthropicMock();
    const moderation = (mode: 'chunked' | 'buffered') => ({ moderation: { mode, rules: [{ name: 'weapons', category: 'violence', terms: ['make a bomb'] }] } });
    gw = await startGateway({
      http: 'node',
      env: { SLUICE_T_ANTHROPIC: ANTHROPIC_MOCK_KEY },
      config: {
        providers: { anthropic: { kind: 'anthropic', base_url: `${claude.url}/v1`, api_key_env: 'SLUICE_T_ANTHROPIC' } },
        organizations: [
          { id: 'acme', models: [CLAUDE] },
          { id: 'chunked', models: [CLAUDE], policy: moderation('chunked') },
          { id: 'buffered', models: [CLAUDE], policy: moderation('buffered') },
        ],
      },
    });
    key = await gw.key('acme');
    for (const org of ['acme', 'chunked', 'buffered'] as const) {
      clients[org] = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: org === 'acme' ? key : await gw.key(org), maxRetries: 0 });
    }
  });
  after(async () => { await gw.close(); await claude.close(); });

  const request = { model: CLAUDE, messages: [{ role: 'user' as const, content: 'Weather in Rome, time in Oslo?' }], tools, reasoning_effort: 'low' as const };

  for (const [label, t] of [['thinking, redacted, thinking, tool_use', SIGNED], ['interleaved thinking after a tool_use', INTERLEAVED]] as const) {
    for (const org of ['acme', 'chunked', 'buffered'] as const) {
      test(`${label}: the openai SDK's finalChatCompletion() has every block create() has (${org})`, async () => {
        claude.script = [{ transcript: t.json }];
        const created = await clients[org].chat.completions.create(request);
        claude.script = [{ transcript: t.sse }];
        const streamed = await clients[org].chat.completions.stream(request).finalChatCompletion();
        const blocks = (m: object) => (m as { thinking_blocks?: unknown }).thinking_blocks;
        assert.equal((blocks(created.choices[0]!.message) as unknown[]).length, t === SIGNED ? 3 : 4);
        assert.deepEqual(blocks(streamed.choices[0]!.message), blocks(created.choices[0]!.message));
        assert.deepEqual(streamed.choices[0]!.message.tool_calls?.map((c) => c.type === 'function' && c.function), created.choices[0]!.message.tool_calls?.map((c) => c.type === 'function' && c.function));
      });
    }
  }

  test('a raw reader: the blocks come once, together, with the finish reason; the thinking text streams before them', async () => {
    claude.script = [{ transcript: { ...INTERLEAVED.sse, pace_ms: 5 } }];
    const chunks = await rawChunks(gw.url, key, request);
    const withBlocks = chunks.filter((c) => c.choices.some((ch: any) => ch.delta?.thinking_blocks));
    assert.equal(withBlocks.length, 1);
    assert.deepEqual(withBlocks[0].choices[0].delta.thinking_blocks, [A, R, C, D]);
    assert.equal(withBlocks[0].choices[0].finish_reason, 'tool_calls');
    const firstReasoning = chunks.findIndex((c) => c.choices[0]?.delta?.reasoning_content);
    assert.equal(chunks[firstReasoning].choices[0].delta.reasoning_content, 'Rome f');
    assert.ok(firstReasoning < chunks.indexOf(withBlocks[0]));
    // A chunk that carried only a block is not left behind empty.
    assert.ok(chunks.every((c) => c.choices.length === 0 || c.choices.some((ch: any) => ch.finish_reason || Object.keys(ch.delta).length > 0)));
  });

  test('a tool loop from a streamed turn sends Claude every block back, in order', async () => {
    for (const t of [SIGNED, INTERLEAVED]) {
      claude.script = [{ transcript: t.sse }];
      const first = (await clients.acme.chat.completions.stream(request).finalChatCompletion()).choices[0]!.message;
      const { role, content, tool_calls, thinking_blocks } = first as typeof first & { thinking_blocks: unknown };
      const results = tool_calls!.map((c) => ({ role: 'tool' as const, tool_call_id: c.id, content: '18 C' }));
      const messages = [...request.messages, { role, content, tool_calls, thinking_blocks } as OpenAI.Chat.ChatCompletionMessageParam, ...results];
      const done = await clients.acme.chat.completions.stream({ ...request, messages }).finalChatCompletion();
      assert.match(done.choices[0]!.message.content!, /Tool said: 18 C/);
      const sent = claude.requests.at(-1)!.body.messages[1].content;
      const want = (JSON.parse(JSON.stringify(t.json.json)) as { content: Block[] }).content.filter((b) => b.type === 'thinking' || b.type === 'redacted_thinking');
      assert.deepEqual(sent.filter((b: Block) => b.type !== 'text' && b.type !== 'tool_use'), want);
      assert.deepEqual(sent.filter((b: Block) => b.type === 'tool_use').map((b: any) => b.id), tool_calls!.map((c) => c.id));
    }
  });

  // The Responses API's translation of the same stream seals each run of blocks into its own reasoning
  // item, as the JSON answer does; under chunked moderation too, where what a window held of the
  // thinking, of a call's arguments or of a text goes out before the part that follows it.
  for (const org of ['acme', 'chunked'] as const) {
    test(`the Responses API: reasoning items carry the same sealed blocks, JSON and stream (${org})`, async () => {
      const rtools = tools.map((t) => ({ type: 'function' as const, name: t.function.name, parameters: t.function.parameters!, strict: false }));
      const body = { model: CLAUDE, input: 'Weather in Rome, time in Oslo?', tools: rtools };
      const withoutIds = (r: OpenAI.Responses.Response) => JSON.parse(JSON.stringify(r.output.map(({ id: _id, ...rest }) => rest), (k, v) => (k === 'parsed' || k === 'parsed_arguments' ? undefined : v)));
      for (const [t, kinds] of [[SIGNED, ['reasoning', 'function_call']], [INTERLEAVED, ['reasoning', 'function_call', 'reasoning', 'message', 'reasoning', 'function_call']]] as const) {
        claude.script = [{ transcript: t.json }];
        const created = await clients[org].responses.create(body);
        claude.script = [{ transcript: t.sse }];
        const s = clients[org].responses.stream(body);
        // No event for an item after its done event (a call's arguments, a message's text).
        const done = new Set<number>();
        for await (const e of s) {
          if (!('output_index' in e)) continue;
          assert.ok(!done.has(e.output_index), `${e.type} for output ${e.output_index}, which was done`);
          if (e.type === 'response.output_item.done') done.add(e.output_index);
        }
        const streamed = await s.finalResponse();
        assert.deepEqual(created.output.map((o) => o.type), kinds);
        assert.deepEqual(withoutIds(streamed), withoutIds(created));
        const sealed = created.output.filter((o) => o.type === 'reasoning').map((o) => JSON.parse(Buffer.from(o.encrypted_content!.split(':')[1]!, 'base64').toString()));
        assert.deepEqual(sealed, t === SIGNED ? [[A, R, B]] : [[A], [R, C], [D]]);
      }
    });
  }

  // A guard (it passed before the blocks were held too): LangChain's ChatOpenAI carries no
  // thinking_blocks, but its raw chunks concatenate arrays, where a running list would repeat blocks.
  test("LangChain's concatenated raw chunks hold each block once", async () => {
    claude.script = [{ transcript: INTERLEAVED.sse }];
    const chat = new ChatOpenAI({ model: CLAUDE, apiKey: key, maxRetries: 0, configuration: { baseURL: `${gw.url}/v1` }, __includeRawResponse: true }).bindTools(tools);
    let all: AIMessageChunk | undefined;
    for await (const c of await chat.stream('Weather in Rome, time in Oslo?')) all = all ? concat(all, c) : c;
    const raw = all!.additional_kwargs.__raw_response as { choices: Array<{ delta: { thinking_blocks?: unknown } }> };
    assert.deepEqual(raw.choices[0]!.delta.thinking_blocks, [A, R, C, D]);
    assert.equal(all!.tool_calls?.length, 2);
  });
});
