// Where inline scanning should hand over to the worker pool, and what the
// pool buys on 64 KB prompts under concurrency (target >= 1.5x inline).
// For each size: the inline scan time (all of it on the main thread), and for
// an offloaded scan its latency and the main-thread time it still costs
// (structured clone, message passing), read from event-loop utilisation.
// Run: npx tsc -p tsconfig.json && node dist/bench/policy-offload.js
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { createPolicyEngine } from '../src/policy/engine.js';
import type { PolicyEngine } from '../src/policy/types.js';

const PARA = 'Hello, I need help reviewing the quarterly report for the Berlin office. The numbers in section 3 look off: '
  + 'revenue was 1,234,567 EUR in Q3 2024 versus 1,100,000 in Q2, a 12.2% increase. Can you summarise the main drivers '
  + 'and suggest three follow-up questions for the finance team? Also contact jane.doe@example.com if anything is unclear. ';
const fill = (n: number): string => PARA.repeat(Math.ceil(n / PARA.length)).slice(0, n);

const threads = availableParallelism();
const inline = createPolicyEngine({}, { workers: 0 });
const pooled = createPolicyEngine({}, { workers: threads, offload_threshold_chars: 0, max_queue: 10_000 });

// Correctness first: the pool and the main thread agree.
const sample = [fill(64 * 1024)];
assert.deepEqual(await pooled.scanInput('org', sample), await inline.scanInput('org', sample));

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

async function perCall(engine: PolicyEngine, texts: string[], n: number): Promise<{ wallUs: number; mainUs: number }> {
  const walls: number[] = [];
  const elu0 = performance.eventLoopUtilization();
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await engine.scanInput('org', texts);
    walls.push(performance.now() - t0);
  }
  const elu = performance.eventLoopUtilization(elu0);
  return { wallUs: median(walls) * 1000, mainUs: (elu.active / n) * 1000 };
}

const rows = [];
for (const kb of [1, 2, 4, 8, 16, 32, 64, 256]) {
  const texts = [fill(kb * 1024)];
  const n = Math.max(40, Math.min(2_000, Math.round(4_000 / kb)));
  await perCall(inline, texts, 20);
  await perCall(pooled, texts, 20);
  const a = await perCall(inline, texts, n);
  const b = await perCall(pooled, texts, n);
  rows.push({
    size: `${kb} KB`,
    'inline us': +a.wallUs.toFixed(1),
    'offload latency us': +b.wallUs.toFixed(1),
    'offload main-thread us': +b.mainUs.toFixed(1),
    'main-thread saved': `${(a.wallUs / b.mainUs).toFixed(1)}x`,
  });
}
console.table(rows);

/** Requests per second with `concurrency` scans in flight at once. */
async function throughput(engine: PolicyEngine, texts: string[], total: number, concurrency: number): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next++ < total) await engine.scanInput('org', texts);
  }));
  return total / ((performance.now() - started) / 1000);
}

// Interleaved rounds, so that load from other processes on a shared machine
// hits both sides alike; the median ratio is the figure to read.
const big = [fill(64 * 1024)];
await throughput(pooled, big, 100, 16);
const rounds = [];
for (let r = 0; r < 5; r++) {
  const inlineRate = await throughput(inline, big, 300, 16);
  const pooledRate = await throughput(pooled, big, 300, 16);
  rounds.push({ round: r + 1, 'inline req/s': Math.round(inlineRate), 'offloaded req/s': Math.round(pooledRate), speedup: +(pooledRate / inlineRate).toFixed(2) });
}
console.table(rounds);
console.log(`64 KB prompts, 16 in flight, ${threads} threads: median speedup ${median(rounds.map((r) => r.speedup)).toFixed(2)}x`);

await Promise.all([inline.close(), pooled.close()]);
