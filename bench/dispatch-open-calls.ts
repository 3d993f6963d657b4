// What handing one upstream call a connection costs while many calls are
// open on the same origin, as when a gateway holds thousands of streams:
// undici's Pool (which walks every client it has to find a free one, and
// again after the dispatch) against OriginClients (a stack of idle ones).
// Each target holds HELD calls open at a local server, then makes 2,000
// short calls, 20 at a time, and times the dispatch call itself. Each target
// runs in a process of its own, so neither's sockets or heap weigh on the
// other's numbers.
//
//   npx tsc -p tsconfig.json && node dist/bench/dispatch-open-calls.js
import { execFileSync } from 'node:child_process';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Pool, type Dispatcher } from 'undici';
import { OriginClients } from '../src/upstream/origin-clients.js';

const SHORT_CALLS = 2_000;
const AT_ONCE = 20;
const HELD = [100, 1_000, 5_000];
const ROUNDS = 3;

/** A handler that reads nothing: one both clients take (their heads differ: undici's an object, sluice's an AnswerHead). */
interface Quiet {
  onRequestStart(): void; onResponseStart(): void; onResponseData(): void; onResponseEnd(): void; onResponseError(_c: unknown, err: Error): void;
}

const quiet = (onEnd: () => void = () => {}): Quiet => ({
  onRequestStart() {}, onResponseStart() {}, onResponseData() {}, onResponseEnd: onEnd, onResponseError(_c, err) { throw err; },
});

/** One measurement, in this process: µs of dispatch per short call with `held` calls open. */
async function measure(target: 'pool' | 'stack', held: number): Promise<number> {
  const open: ServerResponse[] = [];
  const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    req.resume();
    req.on('end', () => { if (req.url === '/hold') open.push(res); else res.end('ok'); });
  });
  await new Promise<void>((ok) => server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, ok));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const opts = { connectTimeoutMs: 10_000, headersTimeoutMs: 60_000, bodyTimeoutMs: 60_000, connections: undefined };
  const dispatcher: { dispatch(o: Dispatcher.DispatchOptions, h: Quiet): unknown } = target === 'pool'
    ? new Pool(origin, { connections: null, pipelining: 1, keepAliveTimeout: 30_000 })
    : new OriginClients(origin, opts);

  for (let i = 0; i < held; i++) dispatcher.dispatch({ path: '/hold', method: 'GET' }, quiet());
  while (open.length < held) await new Promise((r) => setTimeout(r, 20));

  let spent = 0;
  let done = 0;
  await new Promise<void>((finished) => {
    const one = (): void => {
      const t0 = performance.now();
      dispatcher.dispatch({ path: '/short', method: 'GET' }, quiet(() => {
        if (++done === SHORT_CALLS) finished();
        else if (done % AT_ONCE === 0) for (let k = 0; k < AT_ONCE; k++) one();
      }));
      spent += performance.now() - t0;
    };
    for (let k = 0; k < AT_ONCE; k++) one();
  });
  for (const res of open) res.destroy();
  server.closeAllConnections();
  return (spent * 1000) / SHORT_CALLS;
}

const [, , target, held] = process.argv;
if (target === 'pool' || target === 'stack') {
  process.stdout.write(`${(await measure(target, Number(held))).toFixed(1)}\n`);
  process.exit(0);
}

const self = fileURLToPath(import.meta.url);
console.log('dispatch µs per call, best and worst of rounds');
console.log('open calls | undici Pool | OriginClients');
for (const h of HELD) {
  const runs = { pool: [] as number[], stack: [] as number[] };
  for (let r = 0; r < ROUNDS; r++) {
    for (const t of ['pool', 'stack'] as const) runs[t].push(Number(execFileSync(process.execPath, [self, t, String(h)], { encoding: 'utf8' })));
  }
  const range = (xs: number[]) => `${Math.min(...xs).toFixed(1)}-${Math.max(...xs).toFixed(1)}`;
  console.log(`${String(h).padStart(10)} | ${range(runs.pool).padStart(11)} | ${range(runs.stack).padStart(13)}`);
}
