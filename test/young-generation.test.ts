// A gateway thread or process gets the young generation server.semi_space_mb
// asks for. Observed the way it matters: under a request-like allocation load
// (short-lived garbage over a working set that keeps turning over) V8 grows the
// new space up to twice the semi-space, and no further. At node's default
// (16 MB on Node 20) it stops at 32 MB; at 32 MB it reaches 64 MB. And where
// it starts, before any load: one semi-space, 1-2 MB unless told otherwise.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { processExecArgv, semiSpaceFlag, threadResourceLimits } from '../src/threads/young-generation.js';

/** Allocates like a busy gateway; \`sizes\` is the new space's size in MB before and after. */
const LOAD = `
const v8 = require('node:v8');
const newSpace = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size / 2 ** 20;
const start = newSpace();
const inFlight = [];
for (let i = 0; i < 3e6; i++) {
  inFlight.push({ id: 'req_' + i, body: [i, i + 1], headers: { n: i } });
  if (inFlight.length > 20000) inFlight.splice(0, 10000);
}
const sizes = { start, loaded: newSpace() };
`;

interface Sizes { start: number; loaded: number }

function inThread(resourceLimits?: { maxYoungGenerationSizeMb: number }): Promise<Sizes> {
  const w = new Worker(`${LOAD} require('node:worker_threads').parentPort.postMessage(sizes);`, { eval: true, ...(resourceLimits ? { resourceLimits } : {}) });
  return new Promise((ok, fail) => { w.once('message', ok); w.once('error', fail); });
}

function inProcess(execArgv: string[]): Promise<Sizes> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-young-'));
  const file = join(dir, 'load.cjs');
  writeFileSync(file, `${LOAD} process.send(sizes, () => process.exit(0));`);
  const child = fork(file, [], { execArgv, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  return new Promise<Sizes>((ok, fail) => { child.once('message', (m) => ok(m as Sizes)); child.once('error', fail); })
    .finally(() => rmSync(dir, { recursive: true, force: true }));
}

test('a gateway thread gets twice the semi-space of new space; a thread without the limit stops at the default', async () => {
  assert.equal((await inThread(threadResourceLimits(32))).loaded, 64);
  assert.ok((await inThread()).loaded < 64, 'node\'s default young generation is smaller');
});

/**
 * In a process started with node's own --max-semi-space-size (32 here; `npm start` passes one),
 * the new space of a thread given `semiSpaceMb`, spawned as spawnThread does or
 * (`yieldFlag` false) with the resource limit alone.
 */
function threadUnderFlag(semiSpaceMb: number, yieldFlag: boolean): Promise<Sizes> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-young-'));
  const file = join(dir, 'spawn.mjs');
  const lib = new URL('../src/threads/young-generation.js', import.meta.url).href;
  writeFileSync(file, `
import { Worker } from 'node:worker_threads';
import { threadResourceLimits, yieldSemiSpaceToThreads } from ${JSON.stringify(lib)};
if (${yieldFlag}) yieldSemiSpaceToThreads(${semiSpaceMb});
const w = new Worker(${JSON.stringify(`${LOAD} require('node:worker_threads').parentPort.postMessage(sizes);`)}, { eval: true, resourceLimits: threadResourceLimits(${semiSpaceMb}) });
w.once('message', (sizes) => process.send(sizes, () => process.exit(0)));
`);
  const child = fork(file, [], { execArgv: ['--max-semi-space-size=32'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  return new Promise<Sizes>((ok, fail) => { child.once('message', (m) => ok(m as Sizes)); child.once('error', fail); })
    .finally(() => rmSync(dir, { recursive: true, force: true }));
}

test('under node\'s own --max-semi-space-size, a gateway thread still gets the semi-space it was given, from its start', async () => {
  const bare = await threadUnderFlag(8, false);
  assert.equal(bare.loaded, 64, 'the flag overrides a worker\'s resource limit (why the thread clears it)');
  assert.ok(bare.start <= 2, 'V8 starts a heap small and grows it under load');
  assert.deepEqual(await threadUnderFlag(8, true), { start: 8, loaded: 16 });
});

test('a gateway process gets the semi-space as node\'s flag, replacing one it inherited', async () => {
  const argv = processExecArgv(32, ['--max-semi-space-size=8', '--min-semi-space-size=8', '--enable-source-maps']);
  assert.deepEqual(argv, ['--enable-source-maps', '--no-allocation-site-pretenuring', '--max-semi-space-size=32', '--min-semi-space-size=32']);
  // Not repeated when the parent already had it.
  assert.deepEqual(processExecArgv(16, argv), ['--enable-source-maps', '--no-allocation-site-pretenuring', '--max-semi-space-size=16', '--min-semi-space-size=16']);
  assert.deepEqual(await inProcess(argv), { start: 32, loaded: 64 });
  const bare = await inProcess([]);
  assert.ok(bare.loaded < 64, 'node\'s default young generation is smaller');
  assert.ok(bare.start <= 2);
});

test('semiSpaceFlag reads the flag\'s value from the command line, else NODE_OPTIONS', () => {
  assert.equal(semiSpaceFlag(['--max-semi-space-size=32'], ''), 32);
  assert.equal(semiSpaceFlag([], '--enable-source-maps --max-semi-space-size=64'), 64);
  assert.equal(semiSpaceFlag(['--max_semi_space_size', '48'], '--max-semi-space-size=64'), 48, 'the command line wins');
  assert.equal(semiSpaceFlag(['--max-semi-space-size=8', '--max-semi-space-size=16'], ''), 16, 'the last one counts');
  assert.ok(Number.isNaN(semiSpaceFlag(['--max-semi-space-size'], '')!));
  assert.equal(semiSpaceFlag(['--max-old-space-size=4096', '--max-semi-space-size-x=3'], '--enable-source-maps'), undefined);
});
