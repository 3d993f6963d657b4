// npm run bench:micro: every tinybench micro-benchmark, one after another,
// each in its own process so one's JIT state and garbage do not colour the next.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
// Not micro-benchmarks: the load bench and its parts, and this runner.
const NOT_MICRO = new Set(['run.js', 'micro.js', 'load-servers.js', 'targets.js', 'scenarios.js', 'nginx.js', 'svg-chart.js', 'uws-floor-proxy.js']);
const only = process.argv[2];
let failed = 0;
for (const f of readdirSync(here).filter((f) => f.endsWith('.js') && !NOT_MICRO.has(f)).sort()) {
  if (only && !f.includes(only)) continue;
  console.log(`\n== ${f.replace(/\.js$/, '')}`);
  const r = spawnSync(process.execPath, [here + f], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
