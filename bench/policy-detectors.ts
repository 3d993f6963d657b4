// Built-in DLP detectors: cost on a 1 KB prompt (target <= 10 us) and
// throughput on large texts (target >= 100 MB/s per core), then the
// measurement behind the engine choice in src/policy/detectors.ts.
// Run: npx tsc -p tsconfig.json && node dist/bench/policy-detectors.js
import assert from 'node:assert/strict';
import RE2 from 're2';
import { Bench } from 'tinybench';
import { compilePolicy } from '../src/policy/compile.js';
import { orgPolicySchema } from '../src/policy/config-schema.js';
import { scanTexts } from '../src/policy/scan-input.js';

const PARA = 'Hello, I need help reviewing the quarterly report for the Berlin office. The numbers in section 3 look off: '
  + 'revenue was 1,234,567 EUR in Q3 2024 versus 1,100,000 in Q2, a 12.2% increase. Can you summarise the main drivers '
  + 'and suggest three follow-up questions for the finance team? Also contact jane.doe@example.com if anything is unclear. ';
const fill = (n: number): string => PARA.repeat(Math.ceil(n / PARA.length)).slice(0, n);
const prompt1k = fill(1024);
const text1m = fill(1 << 20);
// The same prose broken into lines, sentence by sentence: each break sits between two token
// characters ('.' and a capital), so these texts are also read with their breaks joined.
const inLines = (text: string): string => text.replaceAll('. ', '.\n').replaceAll(': ', ':\n');
const lines1k = inLines(prompt1k);
const lines1m = inLines(text1m);

const policy = compilePolicy(orgPolicySchema.parse({ shield: { builtin: false } }));
const withShield = compilePolicy(orgPolicySchema.parse({}));
const scan = (text: string) => scanTexts(policy, [text]);

// Correctness first: the prompt's email is replaced, its numbers are not.
const checked = scan(`${PARA} card 4111 1111 1111 1111, v1.2.3`);
assert.ok(!checked.blocked);
if (!checked.blocked) {
  assert.equal(checked.scan.byType.email, 1);
  assert.equal(checked.scan.byType.card, 1);
  assert.equal(checked.scan.redactions, 2);
  assert.ok(checked.scan.texts[0]!.includes('1,234,567 EUR'));
}

// The same twelve detections written without lookaround, so both engines
// can run them (RE2 caps a repeat at 1000): what one combined pass costs on each.
const SOURCES = [
  '-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY-----', 'eyJ[A-Za-z0-9_-]{4,1000}\\.eyJ[A-Za-z0-9_-]{4,1000}\\.[A-Za-z0-9_-]{0,1000}',
  'gh[pousr]_[A-Za-z0-9]{36,255}', 'sk(?:-|_live_|_test_)[A-Za-z0-9_-]{20,256}', '(?:AKIA|ASIA)[A-Z0-9]{16}',
  '[Bb]earer[ \\t]{1,4}[A-Za-z0-9._~+/=-]{16,1000}', '[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\\.[A-Za-z0-9-]{1,63}){0,8}\\.[A-Za-z]{2,24}',
  '[A-Z]{2}\\d{2}(?: ?[A-Z0-9]{4}){2,7}', '[2-6](?:[ -]?\\d){12,18}', '\\d{3}-\\d{2}-\\d{4}',
  '(?:\\d{1,3}\\.){3}\\d{1,3}', '\\+\\d{1,3}(?:[ .-]\\d{1,10}){1,6}',
];
const v8Combined = new RegExp(SOURCES.map((s) => `(${s})`).join('|'), 'g');
const re2Combined = new RE2(SOURCES.map((s) => `(${s})`).join('|'), 'g');
const re2Set = new RE2.Set(SOURCES);
const count = (re: RegExp, text: string): number => {
  re.lastIndex = 0;
  let n = 0;
  while (re.exec(text) !== null) n++;
  return n;
};
assert.equal(count(v8Combined, prompt1k), count(re2Combined, prompt1k));

const bench = new Bench({ time: 1_000, warmup: true });
bench
  .add('detectors, 1 KB prompt', () => scan(prompt1k))
  .add('detectors + built-in shield, 1 KB prompt', () => scanTexts(withShield, [prompt1k]))
  .add('detectors, 1 MB text', () => scan(text1m))
  .add('detectors, 1 KB prompt in lines', () => scan(lines1k))
  .add('detectors, 1 MB text in lines', () => scan(lines1m))
  .add('compare: V8 one combined alternation, 1 KB', () => count(v8Combined, prompt1k))
  .add('compare: RE2 one combined alternation, 1 KB', () => count(re2Combined, prompt1k))
  .add('compare: RE2.Set prefilter only, 1 KB', () => re2Set.match(prompt1k))
  .add('compare: V8 one combined alternation, 1 MB', () => count(v8Combined, text1m))
  .add('compare: RE2 one combined alternation, 1 MB', () => count(re2Combined, text1m));
await bench.run();

const sizes: Record<string, number> = { '1 KB': 1024, '1 MB': 1 << 20 };
console.table(bench.tasks.map((t) => {
  const p50ms = t.result?.latency.p50 ?? NaN;
  const bytes = sizes[t.name.includes('1 MB') ? '1 MB' : '1 KB']!;
  return { task: t.name, 'p50 us': +(p50ms * 1000).toFixed(2), 'MB/s': +(bytes / (p50ms * 1000)).toFixed(0) };
}));
