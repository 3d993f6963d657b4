// npm run bench: one command, one table, one run. Every target (the bare
// mock, nginx when installed, a logic-free node:http proxy, the uws floor, a
// logic-free proxy on sluice's own stack, the net floor, the same over a
// bare HTTP/1.1 client, sluice with and without policy,
// sluice on N threads, and optionally an earlier build) goes through every
// scenario in the same run, and the table gives ratios against the mock, the
// proxy and the floor: absolute numbers on shared cores are noise, ratios
// taken side by side are not. Results also go to bench-results/ as JSON and as
// an SVG chart of latency percentiles.
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { latencyChart } from './svg-chart.js';
import { scenarios, verify, type Capabilities, type Measure } from './scenarios.js';
import { FLOOR, startTargets } from './targets.js';
import { shapesPriced } from './production-headers.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const SLOW = Number(process.env.BENCH_SLOW_STREAMS ?? 5000);
const THREADS = Number(process.env.BENCH_THREADS ?? availableParallelism());
const ONLY = process.env.BENCH_ONLY; // a substring of scenario names, to run a subset

const fmt = (n: number | undefined, d = 2) => (n === undefined || !Number.isFinite(n) ? '-' : n.toFixed(d));

async function main(): Promise<void> {
  const { targets, notes } = await startTargets({ threads: THREADS, baseline: process.env.BENCH_BASELINE });
  // A run that fails part-way still stops its targets: the forked ones would follow their parent out,
  // but nginx runs in the foreground of its own process and would be left serving.
  process.once('exit', () => { for (const t of targets) t.stop(); });
  const can = new Map<string, Capabilities>();
  for (const t of targets) {
    const c = await verify(t);
    can.set(t.name, c);
    for (const [what, ok] of Object.entries(c)) if (!ok) notes.push(`${t.name} did not answer ${what} correctly: left out of those scenarios.`);
  }
  const machine = `${cpus().length} × ${cpus()[0]?.model.trim() ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  const shapes = shapesPriced();
  console.log(`npm run bench — ${new Date().toISOString().slice(0, 10)}, ${machine}; ${SECONDS} s per load cell; ${shapes}`);
  for (const n of notes) console.log(`note: ${n}`);

  const results: Array<{ scenario: string; target: string } & Measure> = [];
  for (const sc of scenarios(SECONDS, SLOW)) {
    if (ONLY && !sc.name.includes(ONLY)) continue;
    const able = targets.filter((t) => can.get(t.name)![sc.needs]);
    const measured = await sc.run(able);
    const row: Record<string, Measure> = {};
    for (const t of targets) row[t.name] = measured[able.indexOf(t)] ?? {};
    const mock = row.mock!;
    const proxy = row.proxy!;
    const floor = row[FLOOR] ?? {};
    console.log(`\n${sc.name}`);
    console.log('  target          RPS      p50ms  p99ms  CPUµs/req  RPS/mock  RPS/proxy  CPU/proxy  CPU/floor  idle %  TTFB+ms  RSS MB  loop p99 ms  opening p99  opening s  failed  peak open');
    for (const t of targets) {
      const m = row[t.name]!;
      results.push({ scenario: sc.name, target: t.name, ...m });
      const ttfbAdded = m.ttfbP50 === undefined ? undefined : m.ttfbP50 - mock.ttfbP50!;
      console.log(`  ${t.name.padEnd(14)}  ${fmt(m.rps, 0).padStart(7)}  ${fmt(m.p50).padStart(5)}  ${fmt(m.p99).padStart(5)}  ${fmt(m.cpuUs, 1).padStart(9)}  ${fmt(m.rps && mock.rps ? m.rps / mock.rps : undefined).padStart(8)}  ${fmt(m.rps && proxy.rps ? m.rps / proxy.rps : undefined).padStart(9)}  ${fmt(m.cpuUs && proxy.cpuUs ? m.cpuUs / proxy.cpuUs : undefined).padStart(9)}  ${fmt(m.cpuUs && floor.cpuUs ? m.cpuUs / floor.cpuUs : undefined).padStart(9)}  ${fmt(m.idlePct, 0).padStart(6)}  ${fmt(ttfbAdded, 3).padStart(7)}  ${fmt(m.rssMb, 0).padStart(6)}  ${fmt(m.loopDelayP99Ms, 1).padStart(11)}  ${fmt(m.openingLoopDelayP99Ms, 1).padStart(11)}  ${fmt(m.openingS, 1).padStart(9)}  ${String(m.failed ?? '-').padStart(6)}  ${String(m.peakOpen ?? '-').padStart(9)}`);
    }
    const one = row.sluice, many = row[`sluice x${THREADS}`];
    if (one?.rps && many?.rps) {
      console.log(`  sluice x${THREADS} / sluice: ${fmt(many.rps / one.rps)}x RPS; machine idle ${fmt(one.idlePct, 0)} % under one thread, ${fmt(many.idlePct, 0)} % under ${THREADS}`);
    }
    for (const t of targets) for (const [why, n] of Object.entries(row[t.name]!.failures ?? {})) console.log(`  ${t.name} failed ${n}: ${why}`);
  }

  mkdirSync('bench-results', { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  writeFileSync(`bench-results/bench-${stamp}.json`, JSON.stringify({ date: new Date().toISOString(), machine, seconds: SECONDS, threads: THREADS, shapes, notes, results }, null, 2));
  writeFileSync(`bench-results/latency-${stamp}.svg`, latencyChart(results.filter((r) => r.percentiles)));
  console.log(`\nwritten: bench-results/bench-${stamp}.json, bench-results/latency-${stamp}.svg`);
  for (const t of targets) t.stop();
  setTimeout(() => process.exit(0), 2_500).unref();
}

await main();
