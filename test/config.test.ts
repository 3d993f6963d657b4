// Config is validated once; every error names the field and the rule, and the
// result is frozen.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildConfig, ConfigError, loadConfig } from '../src/config/load-config.js';
import { DEFAULT_MODELS } from '../src/config/default-catalogue.js';

const fails = (input: unknown, pattern: RegExp) => assert.throws(() => buildConfig(input), (e: unknown) => e instanceof ConfigError && pattern.test(e.message));

test('errors name the field and the rule', () => {
  fails({ server: { port: 'eighty' } }, /server\.port: .*number/i);
  fails({ server: { prot: 1 } }, /server: .*prot/i);
  fails({ providers: { x: { kind: 'openai' } } }, /providers\.x\.base_url: is required/);
  fails({ providers: { x: { kind: 'cohere', base_url: 'http://a' } } }, /providers\.x\.kind/);
  fails({ models: [{ id: 'm', provider: 'nope', context_window: 1, pricing: { prompt: 0, completion: 0 } }] }, /models\.0\.provider: unknown provider "nope"/);
  fails({ models: [{ id: 'm', provider: 'openai', context_window: -1, pricing: { prompt: 0, completion: 0 } }] }, /models\.0\.context_window/);
  fails({ organizations: [{ id: 'a', models: ['gpt-9'] }] }, /organizations\.0\.models\.0: unknown model "gpt-9"/);
  fails({ organizations: [{ id: 'a' }, { id: 'a' }] }, /organizations\.1\.id: duplicate/);
  // The same model of the same provider twice: which pricing would apply?
  const m = (context_window: number) => ({ id: 'm', provider: 'openai', context_window, pricing: { prompt: 0, completion: 0 } });
  fails({ models: [m(10), m(99)] }, /models\.1\.id: duplicate model "m" of provider "openai"/);
  assert.equal(buildConfig({ models: [m(10), { ...m(99), provider: 'mistral' }] }).catalogue.filter((e) => e.id === 'm').length, 2, 'one id, two providers');
  fails({ organizations: [{ id: 'a', models: ['gpt-4o'], auto_preference: ['gpt-4o-mini'] }] }, /auto_preference\.0: "gpt-4o-mini" is not an activated model/);
  fails({ models: [{ id: 'auto', provider: 'openai', context_window: 1, pricing: { prompt: 0, completion: 0 } }] }, /models\.0\.id: must not be "auto"/);
  // A zero resolution would sample the loop without pause.
  fails({ telemetry: { event_loop_resolution_ms: 0 } }, /telemetry\.event_loop_resolution_ms/);
});

test('the result is deep-frozen', () => {
  const c = buildConfig({ organizations: [{ id: 'a', models: ['gpt-4o'] }] });
  assert.ok(Object.isFrozen(c));
  assert.ok(Object.isFrozen(c.server));
  assert.ok(Object.isFrozen(c.catalogue[0]));
  assert.ok(Object.isFrozen(c.organizations.get('a')!.models));
  assert.throws(() => { (c.server as any).port = 1; }, TypeError);
});

test('the default catalogue covers every vendor with prices and context windows; the file can override and extend it', () => {
  for (const p of ['openai', 'anthropic', 'gemini', 'deepseek', 'mistral', 'google']) assert.ok(DEFAULT_MODELS.some((m) => m.provider === p), p);
  for (const m of DEFAULT_MODELS) assert.ok(m.context_window > 0 && m.pricing.prompt >= 0, m.id);
  const c = buildConfig({
    models: [
      { id: 'gpt-4o', provider: 'openai', context_window: 99, pricing: { prompt: 7, completion: 7 } },
      { id: 'my-model', provider: 'openai', context_window: 10, pricing: { prompt: 1, completion: 1 } },
    ],
  });
  const gpt = c.catalogue.filter((m) => m.id === 'gpt-4o');
  assert.equal(gpt.length, 1);
  assert.equal(gpt[0]!.context_window, 99);
  assert.ok(c.catalogue.some((m) => m.id === 'my-model'));
});

test('YAML files: parse errors and unreadable files are reported with the file name', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-cfg-'));
  const bad = join(dir, 'bad.yaml');
  writeFileSync(bad, 'server: [unclosed');
  assert.throws(() => loadConfig(bad), (e: unknown) => e instanceof ConfigError && e.message.includes(bad) && /YAML/.test(e.message));
  assert.throws(() => loadConfig(join(dir, 'missing.yaml')), /cannot read/);
  const ok = join(dir, 'ok.yaml');
  writeFileSync(ok, 'organizations:\n  - id: x\n    models: [mock-echo]\n');
  assert.deepEqual(loadConfig(ok).organizations.get('x')!.models, ['mock-echo']);
  // Anchors, and merge keys as generated configs write them.
  const merged = join(dir, 'merged.yaml');
  writeFileSync(merged, 'server:\n  <<: &srv { port: 9940, host: 127.0.0.1 }\n  port: 9941\n');
  const c = loadConfig(merged);
  assert.equal(c.server.port, 9941);
  assert.equal(c.server.host, '127.0.0.1');
  rmSync(dir, { recursive: true, force: true });
});

test('the shipped example config is valid', () => {
  const c = loadConfig(new URL('../../config/example.yaml', import.meta.url).pathname);
  assert.ok(c.organizations.get('demo')!.models.includes('mock-echo'));
});

test('the default retry deadline lets a non-streamed answer run as long as the upstream headers timeout', () => {
  // The deadline cuts off an attempt still waiting for its answer, and a JSON completion is answered only when
  // it is complete: a shorter default would turn every long completion into a 504.
  const c = buildConfig({ organizations: [{ id: 'a', models: ['gpt-4o'] }] });
  for (const [name, p] of c.providers) assert.ok(p.retry.deadline_ms >= c.upstream.headers_timeout_ms, name);
});
