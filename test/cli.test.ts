// The `sluice` command as an operator runs it: serve on an embedded Postgres
// (no DATABASE_URL), create, list and revoke keys from a second process, and
// drain in-flight streams on SIGTERM.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import { MAIN, runCli, startChild, type ChildGateway } from './helpers/child-gateway.js';

describe('sluice CLI on an embedded Postgres', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-cli-'));
  const cfg = join(dir, 'sluice.yaml');
  let mock: OpenAIMock;
  let gw: ChildGateway;
  let env: NodeJS.ProcessEnv;

  before(async () => {
    mock = await startOpenAIMock();
    writeFileSync(cfg, [
      'providers:',
      `  up: { kind: openai, base_url: "${mock.url}/v1", api_key_env: CLI_TEST_UP_KEY }`,
      'models:',
      '  - { id: up-model, provider: up, context_window: 8000, pricing: { prompt: 1, completion: 1 } }',
      'organizations:',
      '  - { id: demo, models: [mock-echo, up-model] }',
      'auth: { cache_ttl_ms: 500 }',
    ].join('\n'));
    env = { ...process.env, SLUICE_DATA_DIR: join(dir, 'data'), CLI_TEST_UP_KEY: OPENAI_MOCK_KEY, LOG_LEVEL: 'info' };
    delete env.DATABASE_URL;
    delete env.REDIS_URL;
    gw = await startChild(['--config', cfg, '--port', '0'], env);
  });
  after(async () => {
    if (gw.proc.exitCode === null) { gw.proc.kill('SIGTERM'); await gw.exited; }
    await mock.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const chat = (key: string, body: object = { model: 'mock-echo', messages: [{ role: 'user', content: 'hi' }] }) =>
    fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: JSON.stringify(body) });

  test('the built `sluice` bin is executable, so `npx sluice` works after a rebuild', () => {
    assert.doesNotThrow(() => accessSync(MAIN, constants.X_OK));
  });

  test('serve started an embedded Postgres and says so', () => {
    assert.ok(gw.logs.join('').includes('"embeddedPostgres":true'));
  });

  let keyId = '';
  let secret = '';
  test('keys create prints the key once, as JSON; keys list never shows it', async () => {
    const created = await runCli(['keys', 'create', '--org', 'demo', '--name', 'ops', '--config', cfg], env);
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.json.key, /^sk-sluice-/);
    assert.match(created.json.id, /^key_/);
    keyId = created.json.id;
    secret = created.json.key;
    const listed = await runCli(['keys', 'list', '--org', 'demo'], env);
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(listed.json.data.map((k: any) => k.id), [keyId]);
    assert.ok(!JSON.stringify(listed.json).includes(secret));
    assert.equal((await chat(secret)).status, 200);
  });

  test('keys create refuses an organisation the config does not define', async () => {
    const r = await runCli(['keys', 'create', '--org', 'nobody', '--name', 'x', '--config', cfg], env);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /unknown organisation/);
  });

  test('keys revoke: the running gateway refuses the key within seconds', async () => {
    // A config it cannot read fails the command before anything changes: the key still works.
    const bad = await runCli(['keys', 'revoke', keyId, '--config', join(dir, 'missing.yaml')], env);
    assert.notEqual(bad.code, 0);
    assert.equal((await chat(secret)).status, 200, 'not revoked by a command that failed');
    const r = await runCli(['keys', 'revoke', keyId], env);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.json, { id: keyId, revoked: true, announced: false });
    // Run again (its announcement lost, say), it announces again and succeeds.
    const again = await runCli(['keys', 'revoke', keyId], env);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(again.json, { id: keyId, revoked: true, already_revoked: true, announced: false });
    const none = await runCli(['keys', 'revoke', 'key_nope'], env);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /no key key_nope/);
    const t0 = Date.now();
    while ((await chat(secret)).status !== 401) {
      assert.ok(Date.now() - t0 < 3_000);
      await new Promise((res) => setTimeout(res, 100));
    }
  });

  test('SIGTERM lets an in-flight stream finish, then exits 0', async () => {
    const created = await runCli(['keys', 'create', '--org', 'demo', '--name', 'drain'], env);
    mock.fault = 'slow-chunks';
    mock.slowMs = 100;
    const res = await chat(created.json.key, { model: 'up-model', stream: true, messages: [{ role: 'user', content: 'a b c d e f' }] });
    assert.equal(res.status, 200);
    gw.proc.kill('SIGTERM');
    const text = await res.text();
    assert.ok(text.trimEnd().endsWith('data: [DONE]'), 'the stream completed');
    assert.equal(await gw.exited, 0);
  });
});
