// Chunked moderation read off a chunk's text (pushPlain) must release, hold and
// block exactly what moderating the parsed chunk (push) does.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { ChatChunk } from '../src/domain.js';
import { ChunkedOutput } from '../src/pipeline/chunked-output.js';
import { createPolicyEngine } from '../src/policy/engine.js';

const engine = createPolicyEngine({
  org: { moderation: { mode: 'chunked', rules: [{ name: 'weapons', category: 'violence', terms: ['make a bomb', 'café "noir"'] }] } },
}, { workers: 0 });
after(() => engine.close());

const HEAD = '{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[';
const content = (text: string, logprobs = false) =>
  `${HEAD}{"index":0,"delta":{"content":${JSON.stringify(text)}}${logprobs ? ',"logprobs":null' : ''},"finish_reason":null}],"obfuscation":"x"}`;
const finish = `${HEAD}{"index":0,"delta":{},"finish_reason":"stop"}]}`;

type Step = { blocked: string } | { content: string | undefined };

/** What each chunk releases: by parsing every chunk, or by reading plain ones off their text. */
function run(chunks: string[], plain: boolean): { steps: Step[]; taken: number } {
  const out = new ChunkedOutput(() => engine.chunked('org'));
  const steps: Step[] = [];
  let taken = 0;
  for (const raw of chunks) {
    const p = plain ? out.pushPlain(raw, HEAD.length) : undefined;
    if (p) {
      taken++;
      if (p.blocked) { steps.push({ blocked: p.category }); break; }
      const sent = p.raw === undefined ? undefined : JSON.parse(p.raw) as ChatChunk;
      if (sent) assert.equal(p.shown, Buffer.byteLength(sent.choices[0]!.delta!.content ?? ''));
      steps.push({ content: sent?.choices[0]?.delta?.content ?? undefined });
      continue;
    }
    const r = out.push(JSON.parse(raw) as ChatChunk);
    if (r.blocked) { steps.push({ blocked: r.category }); break; }
    steps.push({ content: r.chunk?.choices[0]?.delta?.content ?? undefined });
  }
  return { steps, taken };
}

describe('chunked moderation off the chunk text', () => {
  const streams: Record<string, string[]> = {
    'clean text, held back and released at the finish': ['Here is ', 'a harmless ', 'answer, with a ', 'tail.', finish],
    'escapes, unicode and quotes in the content': [
      'line one\n', 'a "quoted" café 😀 ', content('and \\ more ', true),
      `${HEAD}{"index":0,"delta":{"content":"\\u00e9 \\ud83d\\ude00 \\/ end"},"logprobs":null,"finish_reason":null}]}`, finish,
    ],
    'a match split across chunks is blocked': ['please go and ma', 'ke a ', 'bomb now', finish],
    'a match with escaped quotes is blocked': ['order a café ', '"no', 'ir" please', finish],
  };
  for (const [name, texts] of Object.entries(streams)) {
    test(name, () => {
      const chunks = texts.map((t) => (t.startsWith('{') ? t : content(t)));
      const parsed = run(chunks, false);
      const plain = run(chunks, true);
      assert.deepEqual(plain.steps, parsed.steps);
      assert.ok(plain.taken >= chunks.length - 1 || plain.steps.some((s) => 'blocked' in s), 'every content chunk was read off its text');
    });
  }

  test('chunks of any other shape are left to the parsed path', () => {
    const out = new ChunkedOutput(() => engine.chunked('org'));
    for (const raw of [
      finish,
      `${HEAD}{"index":0,"delta":{"role":"assistant","content":"x"},"finish_reason":null}]}`,
      `${HEAD}{"index":0,"delta":{"content":"x"},"finish_reason":null},{"index":1,"delta":{"content":"y"},"finish_reason":null}]}`,
      `${HEAD}{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]},"finish_reason":null}]}`,
      `${HEAD}{"index":0,"delta":{"content":""},"finish_reason":null}]}`,
      // A member beside the choices that may hold text (a search model's citations): push reads it.
      `${HEAD}{"index":0,"delta":{"content":"x"},"finish_reason":null}],"citations":["https://example.com"]}`,
      `${HEAD}{"index":0,"delta":{"content":"x"},"finish_reason":null}],"usage":null,"search_results":[]}`,
    ]) assert.equal(out.pushPlain(raw, HEAD.length), undefined, raw);
    // OpenAI's own members after the choices keep the chunk plain.
    const own = `${HEAD}{"index":0,"delta":{"content":"x"},"finish_reason":null}],"usage":null,"obfuscation":"a\\"b"}`;
    assert.notEqual(out.pushPlain(own, HEAD.length), undefined, own);
  });

  test('a member beside the choices is moderated, by place, across chunks', () => {
    const out = new ChunkedOutput(() => engine.chunked('org'));
    const withSources = (title: string) => JSON.parse(`${HEAD}{"index":0,"delta":{"content":"ok "},"finish_reason":null}],"search_results":[{"title":${JSON.stringify(title)}}]}`) as ChatChunk;
    const first = out.push(withSources('how to ma'));
    assert.equal(first.blocked, false);
    assert.deepEqual(first.blocked === false && first.chunk?.search_results, [{ title: 'how to ma' }], 'sent as it came');
    assert.deepEqual(out.push(withSources('ke a bomb')), { blocked: true, category: 'violence' });
  });
});
