// The size of V8's young generation for a gateway. A chat request allocates
// some 30-40 KB that is dead within milliseconds; V8 collects it with a
// scavenge each time a semi-space fills, copying whatever is still in flight.
// Two settings matter, and the default is a trade between CPU and memory:
//
// - Its size. At 32 MB scavenges are half as frequent as at 16, and each
//   copies about as much: on the 2-core AMD bench VM scavenge pauses per JSON
//   request were 4.4-4.9 us at 32 against 6.1-6.4 at 16, per 20-chunk stream
//   8.0-8.2 against 12.3-14.2 (1-3 % of the request's CPU). But the young
//   generation a burst fills is three times the semi-space, and holding 5,000
//   slow streams one gateway peaked at 239-265 MB at 32 and 217-224 at 16. The
//   default is 16; a gateway that only ever serves short requests can take 32.
// - Where it starts. V8 starts a heap at a 1-2 MB semi-space and doubles it as
//   scavenges find much alive. A burst arriving at a fresh gateway (a deploy, a
//   failover, a load balancer adding an instance) is in flight across the many
//   scavenges of that small space, and its temporaries are promoted to the old
//   generation, to die there. Starting at the full size, the same burst peaked
//   at 217-224 MB against 229-235. A gateway reaches the full size within a
//   second of load anyway; a cold one pays for it, as its own start-up
//   allocations fill the full space at once (idle, 113-115 MB against 95-97).
//
// A gateway thread takes its size as a resource limit and a gateway process as
// a flag; a gateway in the main process has the heap node started it with, so
// there the flags must be on node's command line (`npm start` passes them).
// V8's flags are the process's, and a --max-semi-space-size flag overrides a
// worker's resource limit: under `npm start` every gateway thread got the
// main thread's size whatever server.semi_space_mb said (measured: 59-60 MB
// of new space per thread with the setting at 8). So the flag is cleared
// before a thread is started; the main isolate keeps the heap it was made with.
// Where it starts has no resource limit at all, so threads take it from the
// process's --min-semi-space-size, which V8 caps at each isolate's own size.
import { setFlagsFromString } from 'node:v8';

/** V8's young generation is two semi-spaces and a new large-object space of the same size. */
const YOUNG_PER_SEMI = 3;
const FLAG = '--max-semi-space-size';
const START_FLAG = '--min-semi-space-size';

export function threadResourceLimits(semiSpaceMb: number): { maxYoungGenerationSizeMb: number } {
  return { maxYoungGenerationSizeMb: YOUNG_PER_SEMI * semiSpaceMb };
}

/**
 * Lets isolates created from now on take their young generation's size from
 * their resource limits (0 is V8's "unset"), starting at `semiSpaceMb`.
 * Read when an isolate is created, so it changes no heap that exists;
 * isolates without limits (the policy pool's) keep V8's default size and
 * start at the lesser of it and `semiSpaceMb`.
 */
export function yieldSemiSpaceToThreads(semiSpaceMb: number): void {
  setFlagsFromString(`${FLAG}=0`);
  setFlagsFromString(`${START_FLAG}=${semiSpaceMb}`);
}

/**
 * V8 pretenures an allocation site (allocates its objects straight in the old
 * generation) once enough of them survive a scavenge. A burst of arriving
 * streams makes per-chunk sites look long-lived; from then on every chunk's
 * objects were born old and died there, until a mark-compact. Holding 5,000
 * streams, the old generation grew 2.4-2.7 MB a scavenge with pretenuring and
 * not at all without it; peak RSS 295-335 MB against 281-288, loop delay p99
 * 9.4-10.5 ms against 7.7-9.6, and CPU per JSON request or stream unchanged
 * (2026-11-25, docs/operations.md). The logic-free proxy never promoted.
 */
const GATEWAY_FLAGS = ['--no-allocation-site-pretenuring'];

/** V8's flags for every isolate of this process, set before the gateway allocates (they are the process's). */
export function applyGatewayFlags(): void {
  for (const f of GATEWAY_FLAGS) setFlagsFromString(f);
}

/** node's own flags for a gateway process: the gateway's V8 flags and the semi-space, full from the start (any earlier setting replaced). */
export function processExecArgv(semiSpaceMb: number, inherited: readonly string[] = process.execArgv): string[] {
  const ours = (a: string) => a.startsWith(`${FLAG}=`) || a.startsWith(`${START_FLAG}=`) || GATEWAY_FLAGS.includes(a);
  return [...inherited.filter((a) => !ours(a)), ...GATEWAY_FLAGS, `${FLAG}=${semiSpaceMb}`, `${START_FLAG}=${semiSpaceMb}`];
}

/** V8 takes its flags with dashes or underscores, and a value after `=` or a space. */
const FLAG_VALUE = /--max[-_]semi[-_]space[-_]size(?:[= ](\d+))?(?!\S)/g;

function lastValue(text: string): number | undefined {
  let found: number | undefined;
  for (const m of text.matchAll(FLAG_VALUE)) found = m[1] === undefined ? NaN : Number(m[1]);
  return found;
}

/**
 * The semi-space size (MB) node was started with, from its command line or
 * else NODE_OPTIONS (the command line wins, as in node); undefined when
 * neither sets it, NaN when one names the flag without a value we can read.
 */
export function semiSpaceFlag(execArgv: readonly string[] = process.execArgv, nodeOptions = process.env.NODE_OPTIONS ?? ''): number | undefined {
  return lastValue(execArgv.join(' ')) ?? lastValue(nodeOptions);
}
