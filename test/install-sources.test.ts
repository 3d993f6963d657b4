// Every download at install time comes from the npm registry. re2's install
// script asks install-artifact-from-github for a prebuilt binary, which that
// package fetches from GitHub's release pages; sluice depends on a stand-in of
// its own (scripts/re2-from-source) that npm uses in its place, so re2 builds
// from the source npm ships. A re2 upgrade whose range the stand-in no longer
// satisfies would bring the real fetcher back, nested under re2: this fails then.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const STAND_IN = join(ROOT, 'scripts', 're2-from-source');

test('re2 finds sluice\'s stand-in, not the fetcher that downloads from GitHub', () => {
  const re2 = createRequire(join(ROOT, 'package.json')).resolve('re2/package.json');
  const fetcher = createRequire(re2).resolve('install-artifact-from-github/package.json');
  assert.equal(dirname(realpathSync(fetcher)), realpathSync(STAND_IN));
});

test('the stand-in fails, so that re2\'s install script builds from source', () => {
  const run = spawnSync(process.execPath, [join(STAND_IN, 'bin', 'install-from-cache.js'), '--artifact', 'build/Release/re2.node'], { encoding: 'utf8' });
  assert.equal(run.status, 1);
  assert.match(run.stdout, /built from its source/);
});
