// npm run bench:micro: every tinybench micro-benchmark, one after another,
// each in its own process so one's JIT state and garbage do not colour the next.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
// A micro-benchmark is a file that runs tinybench. The rest of bench/ is the load bench and its
// parts, and the longer benches (soak, Postgres outage, callgrind) with commands of their own:
// a list of exclusions let each new one of those run here too, the 10-minute soak among them.
const isMicro = (f: string) => f.endsWith('.js') && f !== 'micro.js' && readFileSync(here + f, 'utf8').includes("from 'tinybench'");
const only = process.argv[2];
let failed = 0;
for (const f of readdirSync(here).filter(isMicro).sort()) {
  if (only && !f.includes(only)) continue;
  console.log(`\n== ${f.replace(/\.js$/, '')}`);
  const r = spawnSync(process.execPath, [here + f], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
