// How much of the whole machine sat idle while a cell ran, from Linux's
// /proc/stat (undefined elsewhere). On two cores the load generator, the mock
// and the gateway share the CPU: a cell with little idle time measured the
// machine as much as the target, and what one gateway thread leaves idle is
// what more threads have to work with. Not a bound on them: two threads have
// served 1.21x one thread's requests on a machine 12 % idle under one, the
// gateway's CPU per request unchanged, so the rest of the machine spent less
// per request at the higher rate.
import { readFileSync } from 'node:fs';

export interface CpuTicks { idle: number; all: number }

export function cpuTicks(): CpuTicks | undefined {
  try {
    // cpu  user nice system idle iowait irq softirq steal ...: idle and iowait are the idle time.
    const f = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
    return { idle: f[3]! + f[4]!, all: f.reduce((a, b) => a + b, 0) };
  } catch {
    return undefined;
  }
}

/** Percent of the machine idle between two readings. */
export function idlePercent(a: CpuTicks | undefined, b: CpuTicks | undefined): number | undefined {
  return a && b && b.all > a.all ? (100 * (b.idle - a.idle)) / (b.all - a.all) : undefined;
}
