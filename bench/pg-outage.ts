// Postgres stopped for OUTAGE_SECONDS (60) under RPS (200) chat requests a
// second, half of them streams, against a sluice child process on its own
// restartable Postgres. Reports failed requests (the target for known keys is
// 0) and lost traces (rows in Postgres vs requests the gateway authenticated,
// counted once the spool has been replayed). BENCH_REDIS=1 adds REDIS_URL.
//
//   npm run build && node dist/bench/pg-outage.js
import { check } from './check.js';
import pg from 'pg';
import { newKeyMaterial } from '../src/auth/key-format.js';
import { startRestartablePostgres } from '../test/helpers/restartable-postgres.js';
import { startServer, stopServer } from './bench-procs.js';
import { gatewayFailures, pacedLoad } from './paced-client.js';

const OUTAGE_S = Number(process.env.OUTAGE_SECONDS ?? 60);
const RPS = Number(process.env.RPS ?? 200);
const BEFORE_S = 5;
const AFTER_S = 5;
const redisUrl = process.env.BENCH_REDIS === '1' ? process.env.REDIS_URL : undefined;

const server = await startRestartablePostgres();
const mock = await startServer('mock');
const gw = await startServer('sluice', mock.url, { DATABASE_URL: server.url, SLUICE_BENCH_REDIS_URL: redisUrl, MOCK_FAIL_EVERY: '0' });
const chat = (key: string, stream = false) => fetch(`${gw.url}/v1/chat/completions`, {
  method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'bench-model', stream, messages: [{ role: 'user', content: 'hi' }] }),
});

// Correctness first: the key works, as JSON and as a stream, before anything is measured.
const first = await chat(gw.key);
check(first.status === 200, `warm-up answered ${first.status}`);
const s = await (await chat(gw.key, true)).text();
check(s.trimEnd().endsWith('data: [DONE]'), 'warm-up stream is wrong');

let unknownDuring = '';
let stopMs = 0;
let startMs = 0;
const t0 = Date.now();
const outage = (async () => {
  await new Promise((ok) => setTimeout(ok, BEFORE_S * 1000));
  const a = Date.now();
  await server.stop();
  stopMs = Date.now() - t0;
  console.log(`postgres stopped at ${(stopMs / 1000).toFixed(1)} s (took ${Date.now() - a} ms)`);
  await new Promise((ok) => setTimeout(ok, 3_000));
  const r = await chat(newKeyMaterial().secret);
  unknownDuring = `${r.status} ${((await r.json()) as { error?: { code?: string } }).error?.code}`;
  await new Promise((ok) => setTimeout(ok, OUTAGE_S * 1000 - 3_000));
  await server.start();
  startMs = Date.now() - t0;
  console.log(`postgres started at ${(startMs / 1000).toFixed(1)} s`);
})();
const load = await pacedLoad({ url: gw.url, key: gw.key, rps: RPS, seconds: BEFORE_S + OUTAGE_S + AFTER_S, streamShare: 0.5, disconnectShare: 0 });
await outage;

const authFailures = [...load.outcomes].filter(([k]) => k.includes('auth_unavailable') || k.includes('unauthorized')).reduce((n, [, v]) => n + v, 0);
const failed = [...load.outcomes].filter(([k]) => k !== '200').reduce((n, [, v]) => n + v, 0);
const expected = load.sent - authFailures + 2; // + the two warm-up requests

const pool = new pg.Pool({ connectionString: server.url, max: 1 });
const count = async () => Number((await pool.query('SELECT count(*) AS n FROM traces WHERE api_key_id = $1', [gw.keyId])).rows[0].n);
const deadline = Date.now() + 60_000;
let rows = await count();
while (rows < expected && Date.now() < deadline) { await new Promise((ok) => setTimeout(ok, 500)); rows = await count(); }
// Let a replay in progress finish, then look once more: duplicates would show up here.
await new Promise((ok) => setTimeout(ok, 1_000));
rows = await count();
const distinct = Number((await pool.query('SELECT count(DISTINCT request_id) AS n FROM traces WHERE api_key_id = $1', [gw.keyId])).rows[0].n);
await pool.end();

console.log(JSON.stringify({
  outage_s: OUTAGE_S, rps: RPS, redis: !!redisUrl, sent: load.sent, failed, gateway_5xx: gatewayFailures(load),
  outcomes: Object.fromEntries(load.outcomes),
  first_failures: load.failuresAt.slice(0, 5),
  unknown_key_during_outage: unknownDuring,
  traces_expected: expected, traces_rows: rows, traces_distinct: distinct, traces_lost: expected - distinct, traces_duplicated: rows - distinct,
}, null, 2));
check(failed === 0, `${failed} requests failed`);
check(unknownDuring === '503 auth_unavailable', `an unknown key during the outage got ${unknownDuring}`);
check(rows === expected && distinct === expected, 'every trace landed exactly once');

await stopServer(gw.proc, true);
await stopServer(mock.proc, false);
await server.destroy();
