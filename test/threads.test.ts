// `sluice serve` with two gateways on one port (threads under uWebSockets.js,
// cluster processes under node:http): both serve,
// a revocation and a rule change made through one reach the other at once
// (the cache TTL and the rules poll are set to a minute, so only the threads'
// own propagation can explain it), rate limits hold per process, not per
// thread (no Redis: the main thread's store counts for both), every trace lands
// exactly once through the one writer, and SIGTERM lets the streams of every
// thread finish.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createKey } from '../src/store/api-keys-repo.js';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import { call, MGMT_UPSTREAM_ENV, routingConfig } from './helpers/management.js';
import { rawRequest } from './helpers/raw-http.js';
import { createTestDatabase, stopTestPostgres, type TestDatabase } from './helpers/pg.js';
import { spawnSluice, within, type SluiceProcess } from './helpers/sluice-process.js';
import { eventually } from './helpers/resources.js';

after(stopTestPostgres);

/** Each request on its own connection, so SO_REUSEPORT spreads them over the threads. */
const fresh = (url: string, key: string, path: string, body?: object, headers: Record<string, string> = {}) =>
  rawRequest(url, body ? 'POST' : 'GET', path, { authorization: `Bearer ${key}`, ...headers }, body ? JSON.stringify(body) : undefined);

const chat = (model: string) => ({ model, messages: [{ role: 'user', content: 'hi' }] });

const RPM = 10;
/** Chats of the replacement test, which runs with processes only (a thread cannot be killed from outside). */
const AFTER_REPLACEMENT = 12;
/** Chats of the policy test. */
const POLICED_CHATS = 16;
/** Chats of the event-loop test, near the body limit. */
const LARGE_CHATS = 6;

/** Live child processes of `pid` (a zombie not yet reaped is already gone), oldest first. */
function childPids(pid: number): number[] {
  const out: Array<[pid: number, started: number]> = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // pid (comm) state ppid ... starttime (field 22): comm may hold spaces, so read after its closing parenthesis.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === pid && fields[0] !== 'Z') out.push([Number(name), Number(fields[19])]);
    } catch { /* gone meanwhile */ }
  }
  return out.sort((a, b) => a[1] - b[1]).map(([p]) => p);
}

/** Requests served by each thread, in thread order, as a /metrics text counts them. */
function servedIn(text: string): number[] {
  return [...text.matchAll(/^sluice_thread_requests_total\{thread="(\d)"\} (\d+)/gm)].sort((a, b) => Number(a[1]) - Number(b[1])).map((m) => Number(m[2]));
}

/** Requests served so far by each thread, from /metrics. */
async function servedByThread(url: string, key: string): Promise<number[]> {
  return servedIn((await fresh(url, key, '/metrics')).text);
}

/** `n` chats, four connections at a time, each on its own connection so both threads take some. */
async function burst(url: string, key: string, n: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i += 4) {
    const batch = await Promise.all(Array.from({ length: Math.min(4, n - i) }, () => fresh(url, key, '/v1/chat/completions', chat('up-cheap'))));
    statuses.push(...batch.map((r) => r.status));
  }
  return statuses;
}

// Both front ends: uWebSockets.js runs the gateways as threads, node:http as cluster worker processes.
for (const http of ['uws', 'node'] as const) {
  describe(`two gateways in one sluice, ${http === 'uws' ? 'uWebSockets.js threads' : 'node:http cluster processes'}`, () => {
    let mock: OpenAIMock;
    let db: TestDatabase;
    let pool: pg.Pool;
    let dir: string;
    let gw: SluiceProcess;
    let admin: string;

    before(async () => {
      mock = await startOpenAIMock();
      db = await createTestDatabase();
      dir = mkdtempSync(join(tmpdir(), 'sluice-threads-'));
      const configFile = join(dir, 'sluice.yaml');
      const base = routingConfig(mock.url, {
        server: { threads: 2 },
        auth: { cache_ttl_ms: 60_000, last_used_flush_ms: 1_000 },
        redis: { rules_poll_ms: 60_000 },
        // Fine enough that a stall of a few milliseconds shows (the default, 10 ms, is prom-client's).
        telemetry: { event_loop_resolution_ms: 1 },
      });
      const [acme, ...others] = base.organizations!;
      writeFileSync(configFile, JSON.stringify({
        ...base,
        // A provider nothing listens for: one refused connection opens its circuit, on the thread that made it.
        upstream: { circuit: { consecutive_failures: 1 } },
        providers: { ...base.providers, down: { kind: 'openai', base_url: 'http://127.0.0.1:9/v1', api_key_env: MGMT_UPSTREAM_ENV, retry: { max_attempts: 1 } } },
        models: [...base.models!, { id: 'down-model', provider: 'down', context_window: 8_000, pricing: { prompt: 1, completion: 1 } }],
        // The budget makes every thread seed its counter in the main thread's store while it starts.
        organizations: [
          { ...acme!, models: [...acme!.models!, 'down-model'] }, ...others,
          { id: 'limited', models: ['up-cheap'], limits: { rpm: RPM, budget_usd: { amount: 1_000, period: 'day' } } },
          { id: 'archived', models: ['up-cheap'], store_payloads: true },
          { id: 'policed', models: ['up-cheap'], policy: { dlp: { detectors: ['email'] } } },
        ],
        // Scan threads for the instance: each of the two gateways starts its share.
        policy: { workers: 2 },
      }));
      // No REDIS_URL: what reaches the other thread can only be the in-process propagation.
      gw = await spawnSluice(configFile, { DATABASE_URL: db.url, REDIS_URL: undefined, SLUICE_DATA_DIR: dir, SLUICE_HTTP: http, [MGMT_UPSTREAM_ENV]: OPENAI_MOCK_KEY, SLUICE_PAYLOAD_SECRET: 'threads-test-payload-secret-0123456789' });
      pool = new pg.Pool({ connectionString: db.url, max: 2 });
      admin = (await createKey(pool, 'acme', 'admin', 'admin')).key;
    });

    after(async () => {
      await gw.stop();
      await pool.end();
      await db.drop();
      await mock.close();
      rmSync(dir, { recursive: true, force: true });
    });

    test('both threads serve, and /metrics sums them', async () => {
      for (let i = 0; i < 40; i++) assert.equal((await fresh(gw.url, admin, '/v1/chat/completions', chat('up-cheap'))).status, 200);
      const text = (await fresh(gw.url, admin, '/metrics')).text;
      const served = [...text.matchAll(/^sluice_thread_requests_total\{thread="(\d)"\} (\d+)/gm)].map((m) => Number(m[2]));
      assert.equal(served.length, 2, text);
      assert.ok(served.every((n) => n > 0), `each thread served some: ${served}`);
      const total = Number(/^sluice_requests_total\{endpoint="chat",status="200"\} (\d+)/m.exec(text)?.[1]);
      assert.equal(total, 40, 'the counters of both threads are summed');
    });

    test("/metrics gives each gateway's own event-loop delay, where a stall on the thread that served shows", async () => {
      // A body near the 4 MB limit: parsing it and the echoed answer holds a gateway's loop for milliseconds.
      const big = { model: 'up-cheap', messages: [{ role: 'user', content: 'stall '.repeat(600_000) }] };
      // A scrape starts a new window on every gateway, so the next one covers the chats alone.
      const before = await servedByThread(gw.url, admin);
      for (let i = 0; i < LARGE_CHATS; i += 2) {
        const replies = await Promise.all([fresh(gw.url, admin, '/v1/chat/completions', big), fresh(gw.url, admin, '/v1/chat/completions', big)]);
        for (const r of replies) assert.equal(r.status, 200, r.text.slice(0, 300));
      }
      const text = (await fresh(gw.url, admin, '/metrics')).text;
      // Since `before`: the large chats and that scrape's own request (counted once it had answered).
      const served = servedIn(text).map((n, i) => n - before[i]!);
      assert.equal(served.reduce((a, b) => a + b, 0), LARGE_CHATS + 1, `served: ${served}`);
      const lag = (name: string) => new Map([...text.matchAll(new RegExp(`^nodejs_eventloop_lag_${name}_seconds\\{thread="(\\d)"\\} (\\S+)`, 'gm'))].map((m) => [Number(m[1]), Number(m[2])]));
      const max = lag('max');
      const p50 = lag('p50');
      assert.deepEqual([...max.keys()].sort(), [0, 1], text);
      assert.deepEqual([...p50.keys()].sort(), [0, 1], text);
      // Sampled every millisecond, not every ten (prom-client's default would put the median near 0.010).
      for (const [t, v] of p50) assert.ok(v >= 0.0009 && v < 0.009, `thread ${t} p50 ${v}`);
      // Two requests or more since `before` include at least one large chat (the other may be that scrape).
      for (const [t, n] of served.entries()) {
        if (n >= 2) assert.ok(max.get(t)! >= 0.004, `thread ${t} served ${n} requests, large chats among them; its longest delay was ${max.get(t)} s`);
      }
    });

    test('policy.workers counts for the instance: two gateways start one scan thread each, and their chats are redacted', async () => {
      const policed = (await createKey(pool, 'policed', 'policed', 'user')).key;
      const body = { model: 'up-cheap', messages: [{ role: 'user', content: 'mail bob@example.com' }] };
      // Four connections at a time, so that both threads are likely to take some (the kernel picks per connection).
      for (let i = 0; i < POLICED_CHATS; i += 4) {
        const replies = await Promise.all(Array.from({ length: 4 }, () => fresh(gw.url, policed, '/v1/chat/completions', body, { 'gateway-trace': 'true' })));
        for (const r of replies) {
          assert.equal(r.status, 200, r.text);
          assert.equal(JSON.parse(r.text).gateway.redactions, 1);
        }
      }
      const text = (await fresh(gw.url, admin, '/metrics')).text;
      assert.equal(/^sluice_policy_workers (\d+)/m.exec(text)?.[1], '2', 'one pool thread per gateway, summed (a pool of the whole size in each would be 4)');
    });

    test('traces reach the one writer from both threads: rows with a payload whole, the others as COPY lines', async () => {
      const archived = (await createKey(pool, 'archived', 'archived', 'user')).key;
      const before = await servedByThread(gw.url, admin);
      assert.deepEqual(await burst(gw.url, archived, 8), Array(8).fill(200));
      const after = await servedByThread(gw.url, admin);
      assert.ok(after.every((n, i) => n > before[i]!), `each thread served some: ${before} -> ${after}`);
      await within(10_000, async () => {
        const r = await pool.query<{ n: string }>('SELECT count(*) AS n FROM traces t JOIN trace_payloads p USING (request_id) WHERE t.organization_id = $1 AND t.has_payload', ['archived']);
        return Number(r.rows[0]!.n) === 8;
      });
    });

    test('a revocation made through one thread is refused by every thread at once', async () => {
      const created = await call(gw.url, admin, 'POST', '/v1/api-keys', { name: 'doomed' });
      const key = created.body.key as string;
      // Warm both threads' caches: with a 60 s TTL, a stale entry would keep answering 200.
      for (let i = 0; i < 20; i++) assert.equal((await fresh(gw.url, key, '/v1/models')).status, 200);
      assert.equal((await call(gw.url, admin, 'DELETE', `/v1/api-keys/${created.body.id}`)).status, 204);
      const after = await Promise.all(Array.from({ length: 20 }, () => fresh(gw.url, key, '/v1/models')));
      assert.deepEqual([...new Set(after.map((r) => r.status))], [401]);
    });

    test('a role changed through one thread applies on every thread at once, and the key keeps working', async () => {
      const created = await call(gw.url, admin, 'POST', '/v1/api-keys', { name: 'promoted' });
      const key = created.body.key as string;
      for (let i = 0; i < 20; i++) assert.equal((await fresh(gw.url, key, '/v1/api-keys')).status, 403);
      assert.equal((await call(gw.url, admin, 'PATCH', `/v1/api-keys/${created.body.id}`, { role: 'admin' })).status, 200);
      const after = await Promise.all(Array.from({ length: 20 }, () => fresh(gw.url, key, '/v1/api-keys')));
      assert.deepEqual([...new Set(after.map((r) => r.status))], [200]);
    });

    test('a rule created through one thread routes on every thread at once', async () => {
      assert.equal((await fresh(gw.url, admin, '/v1/chat/completions', chat('brand-new'))).status, 404);
      for (let i = 0; i < 20; i++) await fresh(gw.url, admin, '/v1/chat/completions', chat('brand-new'));
      const rule = await call(gw.url, admin, 'POST', '/v1/routes', { name: 'fresh', action_kind: 'pin', match: { requested_model: 'brand-new' }, action: { provider: 'up', model: 'up-cheap' } });
      assert.equal(rule.status, 201);
      const after = await Promise.all(Array.from({ length: 20 }, () => fresh(gw.url, admin, '/v1/chat/completions', chat('brand-new'), { 'gateway-trace': 'true' })));
      assert.deepEqual([...new Set(after.map((r) => r.status))], [200]);
      assert.ok(after.every((r) => r.body.gateway.route_reason === 'rule:fresh'));
    });

    test('an organisation\'s rpm holds for the process: exactly N requests across both threads', async () => {
      const key = (await createKey(pool, 'limited', 'burst', 'admin')).key;
      const before = await servedByThread(gw.url, admin);
      // GCRA lets a burst of RPM in, then one every 6 s: the burst takes well under that.
      const statuses = await burst(gw.url, key, 3 * RPM);
      const served = await servedByThread(gw.url, admin);
      assert.ok(served.every((n, i) => n - before[i]! >= 3), `both threads took requests: ${before} -> ${served}`);
      assert.equal(statuses.filter((s) => s === 200).length, RPM, `statuses ${statuses}`);
      assert.equal(statuses.filter((s) => s === 429).length, 2 * RPM);
    });

    test('a key\'s limits set through one thread hold on every thread at once, and its usage reads alike on both', async () => {
      const created = await call(gw.url, admin, 'POST', '/v1/api-keys', { name: 'limited-key' });
      const key = created.body.key as string;
      // With a 60 s poll, only the threads' own propagation can make the other thread know the new limit.
      const patched = await call(gw.url, admin, 'PATCH', `/v1/api-keys/${created.body.id}`, { limits: { rpm: RPM } });
      assert.equal(patched.status, 200, patched.text);
      const statuses = await burst(gw.url, key, 3 * RPM);
      assert.equal(statuses.filter((s) => s === 200).length, RPM, `statuses ${statuses}`);
      const usage = await Promise.all(Array.from({ length: 8 }, () => fresh(gw.url, admin, `/v1/api-keys/${created.body.id}/usage`)));
      assert.deepEqual([...new Set(usage.map((u) => u.body.usage.key.requests.remaining))], [0], 'every thread reads the one store');
    });

    test('/metrics shows a circuit open on both threads as open (2), not as the sum of their states', async () => {
      const before = await servedByThread(gw.url, admin);
      const statuses = new Set<number>();
      for (let i = 0; i < 20; i += 4) {
        const batch = await Promise.all(Array.from({ length: 4 }, () => fresh(gw.url, admin, '/v1/chat/completions', chat('down-model'))));
        for (const r of batch) statuses.add(r.status);
      }
      const served = await servedByThread(gw.url, admin);
      assert.ok(served.every((n, i) => n - before[i]! >= 2), `both threads took some: ${before} -> ${served}`);
      assert.deepEqual([...statuses].sort(), [502, 503], 'each thread failed once, then refused fast');
      const text = (await fresh(gw.url, admin, '/metrics')).text;
      const states = [...text.matchAll(/^sluice_upstream_circuit_state\{provider="down",origin="[^"]+"\} (\d+)/gm)].map((m) => Number(m[1]));
      assert.deepEqual(states, [2], text.split('\n').filter((l) => l.includes('circuit_state')).join('\n'));
    });

    if (http === 'node') {
      // A process can be stopped and killed from outside, a thread cannot: these two run with processes only.
      test('/metrics does not wait for a gateway that cannot answer: it sums those that do', { timeout: 60_000 }, async () => {
        const [stuck] = childPids(gw.child.pid!);
        process.kill(stuck!, 'SIGSTOP');
        try {
          // The primary hands connections out in turn, so one of two lands on the live gateway.
          let text: string | undefined;
          for (let i = 0; i < 2 && text === undefined; i++) {
            const t0 = performance.now();
            const r = await Promise.race([fresh(gw.url, admin, '/metrics'), new Promise<undefined>((ok) => setTimeout(() => ok(undefined), 6_000))]);
            if (r) {
              assert.equal(r.status, 200);
              assert.ok(performance.now() - t0 < 5_000, 'answered after the wait for the stuck gateway');
              text = r.text;
            }
          }
          assert.ok(text, 'the live gateway answered /metrics');
          assert.equal([...text.matchAll(/^sluice_thread_requests_total\{thread="(\d)"\}/gm)].length, 1, 'only the live gateway\'s own counters');
          // The log line comes over the child's stdout, which the answer over its socket may overtake.
          assert.ok(await eventually(() => gw.log.some((l) => l.includes('not every gateway answered')), 5_000), 'the primary logged the gateway that did not answer');
        } finally {
          process.kill(stuck!, 'SIGCONT');
        }
      });

      test('a gateway process that dies is replaced on the same port', { timeout: 60_000 }, async () => {
        const [victim, ...rest] = childPids(gw.child.pid!);
        assert.equal(rest.length, 1, 'two gateway processes');
        process.kill(victim!, 'SIGKILL');
        await within(20_000, async () => gw.log.some((l) => l.includes('"msg":"gateway thread replaced"')));
        assert.equal(childPids(gw.child.pid!).length, 2);
        const since = new Date();
        assert.deepEqual(await burst(gw.url, admin, AFTER_REPLACEMENT), Array(AFTER_REPLACEMENT).fill(200));
        // The next test kills this replacement outright, which loses the rows it has not yet posted
        // (its last 10 ms, README "Traces"): the count at the end must not depend on that race.
        await within(10_000, async () => {
          const r = await pool.query<{ n: string }>('SELECT count(*) AS n FROM traces WHERE created_at >= $1', [since]);
          return Number(r.rows[0]!.n) === AFTER_REPLACEMENT;
        });
        // The dead one's counters went with it: a second label with requests is the replacement's.
        const served = await servedByThread(gw.url, admin);
        assert.equal(served.length, 2, `both serve: ${served}`);
        assert.ok(served.every((n) => n > 0), `both serve: ${served}`);
      });

      test('a replacement that dies again soon is replaced after a pause, not at once', { timeout: 60_000 }, async () => {
        const lines = () => gw.log.filter((l) => l.includes('"msg":"gateway thread replaced"')).length;
        const before = lines();
        const replacement = childPids(gw.child.pid!).at(-1)!;
        const t0 = performance.now();
        process.kill(replacement, 'SIGKILL');
        await within(20_000, async () => lines() > before);
        const exited = gw.log.filter((l) => l.includes('starting a replacement')).at(-1)!;
        assert.equal(JSON.parse(exited).in_ms, 500, exited);
        assert.ok(performance.now() - t0 >= 500, 'the successor waited');
        assert.equal(childPids(gw.child.pid!).length, 2);
      });
    }

    test('SIGTERM lets every thread finish its streams, and every trace lands exactly once', async () => {
      mock.fault = 'slow-chunks';
      mock.slowMs = 40;
      const seen = mock.requests.length;
      const streams = Array.from({ length: 8 }, () => fresh(gw.url, admin, '/v1/chat/completions', {
        ...chat('up-cheap'), stream: true, messages: [{ role: 'user', content: 'one two three four five six' }],
      }));
      // Every stream under way (the upstream has it) before the signal: one that reached a gateway
      // after it rightly gets 503 shutting_down, and a fixed wait lost that race on a loaded machine.
      await within(10_000, async () => mock.requests.length >= seen + 8);
      const exited = new Promise<number | null>((ok) => gw.child.once('exit', (code) => ok(code)));
      gw.child.kill('SIGTERM');
      const done = await Promise.all(streams);
      for (const r of done) {
        assert.equal(r.status, 200);
        assert.ok(r.text.trimEnd().endsWith('data: [DONE]'), 'the stream finished');
      }
      assert.equal(await exited, 0);
      mock.fault = 'none';
      // The model listings of the revocation test are traced too (endpoint models); these are the chats.
      const rows = await pool.query<{ n: string; ids: string }>("SELECT count(*) AS n, count(DISTINCT request_id) AS ids FROM traces WHERE endpoint = 'chat'");
      // Every chat of this suite, from both threads: 40, the large ones, the policed ones, 8 archived, then 1 + 20 + 20
      // around the rule, 2 x 30 limited, 20 to the dead upstream, the chats after a replacement (processes only), then the 8 streams.
      const chats = 177 + LARGE_CHATS + POLICED_CHATS + (http === 'node' ? AFTER_REPLACEMENT : 0);
      assert.equal(Number(rows.rows[0]!.ids), chats, 'every request traced');
      assert.equal(Number(rows.rows[0]!.n), chats, 'none twice');
    });
  });
}
