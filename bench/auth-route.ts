// The hot-path cost of a cached authentication plus route resolution (target
// ≤ 5 µs): hash the bearer key, hit the in-process LRU, look the requested
// model up in the organisation's compiled rules, resolve the target. Checked for
// the right answer before anything is timed.
//
//   npx tsc -p tsconfig.json && node dist/bench/auth-route.js
import assert from 'node:assert/strict';
import { Bench } from 'tinybench';
import { Authenticator } from '../src/auth/authenticator.js';
import { hashKey, newKeyMaterial } from '../src/auth/key-format.js';
import { Credentials } from '../src/config/credentials.js';
import { buildConfig } from '../src/config/load-config.js';
import { compileOrgCatalogues } from '../src/routing/org-catalogue.js';
import { resolveChat, type RuleMatcher } from '../src/routing/resolve-chat.js';
import { compileRules } from '../src/routing/rule-compiler.js';
import type { KeyRecord } from '../src/store/api-keys-repo.js';

const config = buildConfig({
  providers: { up: { kind: 'openai', base_url: 'http://127.0.0.1:9/v1', api_key_env: 'BENCH_UP_KEY' } },
  models: [
    { id: 'up-cheap', provider: 'up', context_window: 8_000, pricing: { prompt: 0.1, completion: 0.2 } },
    { id: 'up-dear', provider: 'up', context_window: 8_000, pricing: { prompt: 5, completion: 10 } },
  ],
  organizations: [{ id: 'acme', models: ['up-cheap', 'up-dear', 'gpt-4o', 'gpt-4o-mini', 'claude-sonnet-4-20250514'] }],
});
const credentials = new Credentials(config, { BENCH_UP_KEY: 'x' });
const isConfigured = (p: string) => credentials.isConfigured(p);
const catalogue = compileOrgCatalogues(config).get('acme')!;

// Fifty rules, as the rules poller compiles them (evaluation order, first enabled match per alias).
const rules = Array.from({ length: 50 }, (_, i) => ({
  name: `r${i}`, enabled: i % 7 !== 0, action_kind: i % 10 === 3 ? 'auto' as const : 'pin' as const,
  match: { requested_model: `alias-${i % 40}` }, action: { provider: 'up', model: i % 2 ? 'up-dear' : 'up-cheap' },
}));
const compiled = new Map([['acme', compileRules(rules)]]);
const match: RuleMatcher = (org, model) => compiled.get(org)?.get(model);

const material = newKeyMaterial();
const record: KeyRecord = { id: material.id, organization_id: 'acme', name: 'bench', role: 'user' };
const auth = new Authenticator(
  { lookup: async (h) => (h.equals(material.hash) ? record : null) },
  { ttlMs: 60_000, maxEntries: 100_000, flushEveryMs: 60_000, flushLastUsed: async () => {} },
);
const header = `Bearer ${material.secret}`;

// Correctness first: a miss resolves from the tier, then hits are synchronous.
assert.deepEqual(await auth.authenticate(header), record);
assert.ok(!((auth.authenticate(header) as unknown) instanceof Promise), 'a cached key authenticates synchronously');
assert.ok(hashKey(material.secret).equals(material.hash));
const input = (model: string) => ({ model, promptTokens: 40, maxTokens: undefined });
const pinned = resolveChat(catalogue, input('alias-1'), isConfigured, match);
assert.deepEqual([pinned.entry.id, pinned.route_reason], ['up-dear', 'rule:r1']);
const auto = resolveChat(catalogue, input('alias-3'), isConfigured, match);
assert.deepEqual([auto.entry.id, auto.route_reason], ['up-cheap', 'rule:r3']);
assert.equal(resolveChat(catalogue, input('up-dear'), isConfigured, match).route_reason, 'default');

let sink = 0;
const bench = new Bench({ time: 1_000, warmup: true });
bench
  .add('cached auth + pin rule', () => {
    const k = auth.authenticate(header) as KeyRecord;
    sink += resolveChat(catalogue, input('alias-1'), isConfigured, match).entry.context_window + k.id.length;
  })
  .add('cached auth + auto rule (picker)', () => {
    const k = auth.authenticate(header) as KeyRecord;
    sink += resolveChat(catalogue, input('alias-3'), isConfigured, match).entry.context_window + k.id.length;
  })
  .add('cached auth + explicit model id', () => {
    const k = auth.authenticate(header) as KeyRecord;
    sink += resolveChat(catalogue, input('up-dear'), isConfigured, match).entry.context_window + k.id.length;
  })
  .add('cached auth alone', () => { sink += (auth.authenticate(header) as KeyRecord).id.length; });
await bench.run();
await auth.close();

const rows = bench.tasks.map((t) => {
  const l = (t.result as { latency?: { mean: number; p50?: number; p99?: number } } | undefined)?.latency;
  const us = (ms: number | undefined) => +((ms ?? NaN) * 1000).toFixed(3);
  return { case: t.name, 'µs p50': us(l?.p50), 'µs mean': us(l?.mean), 'µs p99': us(l?.p99) };
});
console.table(rows);
assert.ok(sink > 0);
// The median is the figure held to the target: on a shared machine the mean carries other processes' noise.
for (const row of rows.slice(0, 3)) if (row['µs p50'] > 5) console.warn(`${row.case}: ${row['µs p50']} µs (p50) is over the 5 µs target`);
