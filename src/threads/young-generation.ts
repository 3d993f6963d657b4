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

/** node's own flags for a gateway process, with the semi-space set (any earlier setting replaced). */
export function processExecArgv(semiSpaceMb: number, inherited: readonly string[] = process.execArgv): string[] {
  return [...inherited.filter((a) => !a.startsWith(`${FLAG}=`)), `${FLAG}=${semiSpaceMb}`];
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
