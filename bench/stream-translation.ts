// Cost of translating one upstream stream event into gateway StreamEvents, for
// the Anthropic and Gemini adapters (target ≤ 2 µs per chunk), with the
// OpenAI-compatible translator as a baseline. Each stream is checked for the
// right output before anything is timed.
//
//   npx tsc -p tsconfig.json && node dist/bench/stream-translation.js
import assert from 'node:assert/strict';
import { Bench } from 'tinybench';
import type { ProviderAdapter, StreamEvent } from '../src/domain.js';
import { anthropic } from '../src/providers/anthropic/index.js';
import { gemini } from '../src/providers/gemini/index.js';
import { openaiCompatible } from '../src/providers/openai-compatible/index.js';

type WireEvent = [name: string | undefined, data: string];

const CHUNKS = 200;
const pieces = Array.from({ length: CHUNKS }, (_, i) => `tok${i} `);
const answer = pieces.join('');

// Shapes copied from the providers' documented streams, with their usual extra fields.
function anthropicStream(): WireEvent[] {
  const ev = (type: string, body: object): WireEvent => [type, JSON.stringify({ type, ...body })];
  return [
    ev('message_start', { message: { id: 'msg_01', type: 'message', role: 'assistant', model: 'claude-sonnet-4-20250514', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 25, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 } } }),
    ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    ev('ping', {}),
    ...pieces.map((text) => ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text } })),
    ev('content_block_stop', { index: 0 }),
    ev('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: CHUNKS } }),
    ev('message_stop', {}),
  ];
}

function geminiStream(): WireEvent[] {
  return pieces.map((text, i): WireEvent => {
    const last = i === CHUNKS - 1;
    return [undefined, JSON.stringify({
      candidates: [{ content: { parts: [{ text }], role: 'model' }, ...(last ? { finishReason: 'STOP' } : {}), index: 0 }],
      usageMetadata: { promptTokenCount: 25, candidatesTokenCount: i + 1, totalTokenCount: 26 + i, promptTokensDetails: [{ modality: 'TEXT', tokenCount: 25 }] },
      modelVersion: 'gemini-2.5-flash',
      responseId: 'mock-response-id-0123456789',
    })];
  });
}

function openaiStream(): WireEvent[] {
  const chunk = (choices: object[], usage?: object): WireEvent => [undefined, JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices, ...(usage ? { usage } : {}) })];
  return [
    chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]),
    ...pieces.map((content) => chunk([{ index: 0, delta: { content }, finish_reason: null }])),
    chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]),
    chunk([], { prompt_tokens: 25, completion_tokens: CHUNKS, total_tokens: 25 + CHUNKS }),
    [undefined, '[DONE]'],
  ];
}

function translate(adapter: ProviderAdapter, wire: WireEvent[]): StreamEvent[] {
  const t = adapter.streamTranslator();
  const out: StreamEvent[] = [];
  for (const [name, data] of wire) for (const e of t.event(name, data)) out.push(e);
  if (t.end) for (const e of t.end()) out.push(e);
  return out;
}

const cases: [string, ProviderAdapter, WireEvent[], number][] = [
  ['anthropic', anthropic, anthropicStream(), 25],
  ['gemini', gemini, geminiStream(), 25],
  ['openai-compatible (baseline)', openaiCompatible, openaiStream(), 25],
];

for (const [name, adapter, wire, prompt] of cases) {
  const out = translate(adapter, wire);
  const choices = out.flatMap((e) => (e.type === 'chunk' ? e.chunk.choices : []));
  const text = choices.map((c) => (typeof c.delta.content === 'string' ? c.delta.content : '')).join('');
  assert.equal(text, answer, `${name}: content`);
  assert.ok(choices.some((c) => c.delta.role === 'assistant'), `${name}: role`);
  assert.ok(choices.some((c) => c.finish_reason === 'stop'), `${name}: finish_reason`);
  const usage = out.flatMap((e) => (e.type === 'chunk' && e.chunk.usage ? [e.chunk.usage] : [])).at(-1);
  assert.equal(usage?.prompt_tokens, prompt, `${name}: prompt tokens`);
  assert.equal(usage?.completion_tokens, CHUNKS, `${name}: completion tokens`);
  assert.deepEqual(out.at(-1), { type: 'done' }, `${name}: done`);
}

const bench = new Bench({ time: 1000, warmup: true });
let sink = 0;
for (const [name, adapter, wire] of cases) bench.add(name, () => { sink += translate(adapter, wire).length; });
await bench.run();

const rows = cases.map(([name, , wire]) => {
  const result = bench.getTask(name)?.result;
  assert.ok(result && 'latency' in result, `${name}: no result`);
  const perStreamUs = result.latency.mean * 1000;
  return { translator: name, events: wire.length, 'µs/stream': +perStreamUs.toFixed(1), 'µs/chunk': +(perStreamUs / wire.length).toFixed(3), 'rme %': +result.latency.rme.toFixed(2) };
});
console.table(rows);
assert.ok(sink > 0);
for (const row of rows.slice(0, 2)) if (row['µs/chunk'] > 2) console.warn(`${row.translator}: ${row['µs/chunk']} µs per chunk is over the 2 µs target`);
