// Chunked output moderation: CPU per streamed chunk (what it adds to each
// chunk's latency, TTFB included; target <= 0.1 ms) for a typical rule set,
// against buffered moderation of the same text.
// Run: npx tsc -p tsconfig.json && node dist/bench/policy-chunked.js
import assert from 'node:assert/strict';
import { Bench } from 'tinybench';
import { createPolicyEngine } from '../src/policy/engine.js';

const moderation = {
  mode: 'chunked' as const,
  rules: [
    { name: 'violence', category: 'violence', terms: ['kill', 'make a bomb', 'build a weapon', 'shoot up'] },
    { name: 'self_harm', category: 'self-harm', terms: ['kill myself', 'end my life', 'suicide method'] },
    { name: 'slurs', category: 'hate', terms: Array.from({ length: 200 }, (_, i) => `slur${i}x`) },
    { name: 'card_dump', category: 'fraud', pattern: 'CVV:?\\s?\\d{3,4}', max_length: 10 },
    { name: 'leak', category: 'secrets', pattern: '(?i)password\\s*[:=]\\s*\\S{4,64}', max_length: 80 },
  ],
};
const engine = createPolicyEngine({ org: { moderation } }, { workers: 0 });

const answer = 'Here is a summary of the report. Revenue grew by twelve percent, driven by the Berlin office and by new '
  + 'enterprise contracts. Three follow-up questions for finance: what changed in pricing, which customers churned, and '
  + 'how much of the growth is one-off. ';
// Upstream deltas are a few tokens each: about 16 characters.
const chunks = answer.repeat(4).match(/[\s\S]{1,16}/g)!;

// Correctness first: a clean stream comes out whole, and a split match is caught with none of it released.
{
  const m = engine.chunked('org');
  let out = '';
  for (const c of chunks) {
    const step = m.push(c);
    assert.ok(!step.blocked);
    if (!step.blocked) out += step.release;
  }
  const end = m.finish();
  assert.ok(!end.blocked);
  if (!end.blocked) out += end.release;
  assert.equal(out, chunks.join(''));
  const b = engine.chunked('org');
  let leaked = '';
  for (const c of ['my pass', 'word: hunt', 'er2 ok']) {
    const step = b.push(c);
    if (step.blocked) break;
    leaked += step.release;
  }
  assert.equal(leaked.includes('pass'), false);
}

let i = 0;
let m = engine.chunked('org');
const bench = new Bench({ time: 1_000, warmup: true });
bench
  .add('chunked: push one 16-char chunk', () => {
    if (i === chunks.length) {
      m = engine.chunked('org');
      i = 0;
    }
    m.push(chunks[i++]!);
  })
  .add('chunked: first push of a new stream (TTFB cost)', () => engine.chunked('org').push(chunks[0]!))
  .add(`buffered: moderate whole answer (${chunks.join('').length} chars)`, () => engine.moderate('org', chunks.join('')));
await bench.run();
console.table(bench.tasks.map((t) => ({ task: t.name, 'p50 us': +((t.result?.latency.p50 ?? NaN) * 1000).toFixed(2), 'p99 us': +((t.result?.latency.p99 ?? NaN) * 1000).toFixed(2) })));
await engine.close();
