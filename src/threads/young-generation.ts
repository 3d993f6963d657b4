// The size of V8's young generation for a gateway. A chat request allocates
// some 30-40 KB that is dead within milliseconds, yet at Node's default 16 MB
// semi-space a scavenge comes every few hundred requests and copies everything
// still in flight (about 2 MB each time at 10,000 requests a second). A
// larger semi-space makes scavenges rarer while each still copies about as
// much; on the bench 32 MB cut scavenge time per request from 3-8 µs to about
// 2 µs, and fewer objects lived long enough to be promoted. The memory it
// costs is committed only under load: V8 grows the new space as allocation
// demands, so idle or slow-stream gateways stay small (docs/operations.md).
//
// A gateway thread takes it as a resource limit and a gateway process as a
// flag; a gateway in the main process has the heap node started it with, so
// there the flag must be on node's command line (`npm start` passes it).
// V8's flags are the process's, and a --max-semi-space-size flag overrides a
// worker's resource limit: under `npm start` every gateway thread got the
// main thread's 32 MB whatever server.semi_space_mb said (measured: 59-60 MB
// of new space per thread with the setting at 8). So the flag is cleared
// before a thread is started; the main isolate keeps the heap it was made with.
import { setFlagsFromString } from 'node:v8';

/** V8's young generation is two semi-spaces and a new large-object space of the same size. */
const YOUNG_PER_SEMI = 3;
const FLAG = '--max-semi-space-size';

export function threadResourceLimits(semiSpaceMb: number): { maxYoungGenerationSizeMb: number } {
  return { maxYoungGenerationSizeMb: YOUNG_PER_SEMI * semiSpaceMb };
}

/**
 * Lets isolates created from now on take their young generation from their
 * resource limits (0 is V8's "unset"). Read when an isolate is created, so it
 * changes no heap that exists; isolates without limits (the policy pool's)
 * get V8's default.
 */
export function yieldSemiSpaceToThreads(): void {
  setFlagsFromString(`${FLAG}=0`);
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

/** node's own flags for a gateway process: the gateway's V8 flags and the semi-space (any earlier setting replaced). */
export function processExecArgv(semiSpaceMb: number, inherited: readonly string[] = process.execArgv): string[] {
  return [...inherited.filter((a) => !a.startsWith(`${FLAG}=`) && !GATEWAY_FLAGS.includes(a)), ...GATEWAY_FLAGS, `${FLAG}=${semiSpaceMb}`];
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
