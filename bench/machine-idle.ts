// How much of the whole machine sat idle while a cell ran, from Linux's
// /proc/stat (undefined elsewhere). On two cores the load generator, the mock
// and the gateway share the CPU, so what one gateway thread leaves idle bounds
// what more threads can add: with per-request costs unchanged, N threads serve
// at most 1 / (1 - idle) times one thread's requests. Per-request costs move by
// 10-25 % between cells on a shared VM, so a measured ratio can pass the bound
// when the one-thread cell ran slow; the bound is a guide, not a limit.
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

/** The most a gateway with more threads could serve, as a multiple of one thread's, on a machine this idle. */
export const threadsCeiling = (idlePct: number): number => 100 / Math.max(1e-9, 100 - idlePct);
