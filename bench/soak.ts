// A long run under mixed, imperfect load: SOAK_RPS (200) chat requests a
// second for SOAK_SECONDS (600), half of them streams, against a mock upstream
// that fails every 100th request (a 500, or a stream cut after a few chunks;
// retries are off, so each failure reaches the caller),
// with 1% of requests dropped by the client mid-stream. Reports the 5xx the
// gateway caused itself (must be 0), lost traces (rows in Postgres vs requests
// sent; must be 0) and the gateway's RSS sampled over the run (must be flat).
//
//   npm run build && DATABASE_URL=… SOAK_SECONDS=120 node dist/bench/soak.js
import { check } from './check.js';
import pg from 'pg';
import { rssOf, startServer, stopServer } from './bench-procs.js';
import { gatewayFailures, pacedLoad } from './paced-client.js';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 600);
const RPS = Number(process.env.SOAK_RPS ?? 200);
const SAMPLES = 20;
const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) throw new Error('set DATABASE_URL: the soak counts trace rows in Postgres');

const mock = await startServer('mock', '', { MOCK_FAIL_EVERY: '100' });
const gw = await startServer('sluice', mock.url, { DATABASE_URL: databaseUrl, BENCH_RETRY_ATTEMPTS: '1' });
const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
const count = async () => Number((await pool.query('SELECT count(DISTINCT request_id) AS n FROM traces WHERE api_key_id = $1', [gw.keyId])).rows[0].n);

// Correctness first: a JSON answer and a whole stream, then the mock's failures look like upstream failures.
const ask = (stream: boolean) => fetch(`${gw.url}/v1/chat/completions`, {
  method: 'POST', headers: { authorization: `Bearer ${gw.key}`, 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'bench-model', stream, messages: [{ role: 'user', content: 'hi' }] }),
});
const warm: number[] = [];
for (let i = 0; i < 100; i++) warm.push((await ask(false)).status);
check(warm.filter((s) => s === 200).length === 99 && warm.filter((s) => s === 502).length === 1, `warm-up: ${warm.join(',')}`);
const stream = await (await ask(true)).text();
check(stream.trimEnd().endsWith('data: [DONE]'), 'a stream is whole');
const warmRequests = 101;

const rss: Array<{ t: number; mb: number }> = [];
const t0 = Date.now();
const sample = async () => { rss.push({ t: Math.round((Date.now() - t0) / 1000), mb: +((await rssOf(gw.proc)) / 2 ** 20).toFixed(1) }); };
await sample();
const sampler = setInterval(() => { void sample(); }, (SECONDS * 1000) / SAMPLES);
const load = await pacedLoad({ url: gw.url, key: gw.key, rps: RPS, seconds: SECONDS, streamShare: 0.5, disconnectShare: 0.01 });
clearInterval(sampler);
await sample();

const expected = load.sent + warmRequests;
const deadline = Date.now() + 30_000;
let rows = await count();
while (rows < expected && Date.now() < deadline) { await new Promise((ok) => setTimeout(ok, 250)); rows = await count(); }
await pool.end();

// Flat: the last quarter of the samples against the second (the first is warm-up: JIT, pools, buffers).
const q = Math.max(1, Math.floor(rss.length / 4));
const mean = (xs: Array<{ mb: number }>) => xs.reduce((n, x) => n + x.mb, 0) / xs.length;
const early = mean(rss.slice(q, 2 * q));
const late = mean(rss.slice(-q));
const gateway5xx = gatewayFailures(load);
console.log(JSON.stringify({
  seconds: SECONDS, rps: RPS, sent: load.sent, achieved_rps: +(load.sent / SECONDS).toFixed(1),
  outcomes: Object.fromEntries(load.outcomes),
  gateway_5xx: gateway5xx,
  traces_expected: expected, traces_rows: rows, traces_lost: expected - rows,
  rss_mb: rss.map((r) => `${r.t}s ${r.mb}`).join(', '), rss_second_quarter_mb: +early.toFixed(1), rss_last_quarter_mb: +late.toFixed(1), rss_growth_pct: +((late / early - 1) * 100).toFixed(1),
}, null, 2));
check(gateway5xx === 0, `${gateway5xx} gateway-caused 5xx`);
check(rows === expected, `${expected - rows} traces lost`);

await stopServer(gw.proc, true);
await stopServer(mock.proc, false);
