// New requests take at most server.turn_budget_ms of a loop turn; the rest
// wait, and later turns start them in arrival order, each turn until it has
// spent the budget. First the rule on a clock and a scheduler driven by hand,
// then on node's own loop, where a start's cost is in promise reactions, then
// a gateway on both front ends with a budget of a microsecond, which must
// still answer every request of a burst, once.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import OpenAI from 'openai';
import { STARTS_PER_TURN, TurnBudget } from '../src/pipeline/turn-budget.js';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import { HTTP_KINDS, startGateway, type TestGateway } from './helpers/gateway.js';
import { oneUpstreamConfig, UPSTREAM_KEY_ENV } from './helpers/fixtures.js';
import { stopTestPostgres } from './helpers/pg.js';
import { eventually } from './helpers/resources.js';

after(stopTestPostgres);

/** A clock the test moves, and immediates the test runs: one `turn()` is one pass of the check phase. */
function harness(budgetMs: number) {
  let clock = 0;
  let immediates: Array<() => void> = [];
  let deferred = 0;
  const budget = new TurnBudget(budgetMs, () => { deferred++; }, () => clock, { later: (fn) => { immediates.push(fn); } });
  return {
    budget,
    advance(ms: number) { clock += ms; },
    /** Runs the immediates queued before this pass; those they queue wait for the next, as in node. */
    turn() { const now = immediates; immediates = []; for (const fn of now) fn(); },
    get deferred() { return deferred; },
  };
}

test('under the budget a request starts at once; past it, requests wait, and later turns start them in arrival order until each has spent the budget', () => {
  const h = harness(10);
  const started: string[] = [];
  const arrive = (name: string, costMs: number) => h.budget.run(() => { started.push(name); h.advance(costMs); });
  arrive('a', 4);
  arrive('b', 4);
  arrive('c', 4); // 8 ms spent: still under 10, so c starts
  arrive('d', 4); // 12 ms spent
  arrive('e', 4);
  arrive('f', 4);
  arrive('g', 4);
  arrive('h', 4);
  assert.deepEqual(started, ['a', 'b', 'c']);
  assert.equal(h.budget.waiting, 5);
  assert.equal(h.deferred, 5);
  // The end of the same turn, which has spent its budget: one waiting request starts all the same.
  h.turn();
  assert.deepEqual(started, ['a', 'b', 'c', 'd']);
  // A request arriving in the next turn waits behind those already waiting, though that turn has spent nothing.
  arrive('i', 1);
  assert.deepEqual(started, ['a', 'b', 'c', 'd']);
  assert.equal(h.deferred, 6);
  // A fresh turn: e, f and g start at 0, 4 and 8 ms; h would start at 12.
  h.turn();
  assert.deepEqual(started, ['a', 'b', 'c', 'd', 'e', 'f', 'g']);
  // While requests wait the loop does not sleep, so all of the next turn counts: its I/O
  // callbacks (what earlier starts set going) take 7 ms, and h, at 7, leaves no room for i.
  h.advance(7);
  h.turn();
  assert.deepEqual(started, ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']);
  h.turn();
  assert.deepEqual(started, ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i']);
  assert.equal(h.budget.waiting, 0);
});

test('each turn gets a fresh budget once the queue is empty', () => {
  const h = harness(5);
  const started: number[] = [];
  for (let i = 0; i < 3; i++) h.budget.run(() => { started.push(i); h.advance(3); });
  assert.deepEqual(started, [0, 1]);
  h.turn(); // the turn's end, and the waiting request
  assert.deepEqual(started, [0, 1, 2]);
  h.turn();
  for (let i = 3; i < 5; i++) h.budget.run(() => { started.push(i); h.advance(3); });
  assert.deepEqual(started, [0, 1, 2, 3, 4], 'a new turn starts requests at once again');
});

test(`a turn starts at most ${STARTS_PER_TURN} waiting requests, however cheap`, () => {
  const h = harness(10);
  const started: number[] = [];
  h.budget.run(() => { h.advance(11); });
  for (let i = 0; i < 2 * STARTS_PER_TURN + 10; i++) h.budget.run(() => { started.push(i); });
  h.turn(); // the spent turn's end: one
  assert.equal(started.length, 1);
  h.turn();
  assert.equal(started.length, 1 + STARTS_PER_TURN);
  h.turn();
  assert.equal(started.length, 1 + 2 * STARTS_PER_TURN);
  h.turn();
  assert.deepEqual(started, Array.from({ length: 2 * STARTS_PER_TURN + 10 }, (_, i) => i));
});

test("on node's loop, the cost of a start's promise reactions counts against its turn", async () => {
  const budgetMs = 20;
  const costMs = 2;
  const n = 40;
  const budget = new TurnBudget(budgetMs);
  const busy = (ms: number) => { const t = performance.now(); while (performance.now() - t < ms); };
  // Loop turns, counted by an immediate that queues itself: the waiting requests of one turn
  // start from immediates queued together, so they all see the same count.
  let turn = 0;
  let ticking = true;
  const tick = () => { turn++; if (ticking) setImmediate(tick); };
  setImmediate(tick);
  const turnOf: number[] = [];
  const done = new Promise<void>((ok) => {
    budget.run(() => busy(budgetMs + 1));
    for (let i = 0; i < n; i++) {
      budget.run(() => {
        turnOf.push(turn);
        // Nothing synchronous: the whole cost of this start comes after it returns.
        void Promise.resolve().then(() => Promise.resolve()).then(() => { busy(costMs); if (turnOf.length === n) ok(); });
      });
    }
  });
  await done;
  ticking = false;
  const perTurn = new Map<number, number>();
  for (const t of turnOf) perTurn.set(t, (perTurn.get(t) ?? 0) + 1);
  const most = Math.max(...perTurn.values());
  // Read before the reactions ran, the clock would let all 40 start in one turn.
  assert.ok(most <= budgetMs / costMs, `at most ${budgetMs / costMs} starts a turn, got ${[...perTurn.values()]}`);
  assert.ok(most >= 2, `a turn starts more than one waiting request, got ${[...perTurn.values()]}`);
});

for (const http of HTTP_KINDS) {
  describe(`a burst past the turn budget over ${http}`, () => {
    let mock: OpenAIMock;
    let gw: TestGateway;
    let client: OpenAI;
    let key: string;

    before(async () => {
      mock = await startOpenAIMock();
      // A budget of a microsecond: nearly every request after a turn's first waits for a later turn.
      const config = oneUpstreamConfig(mock.url, { server: { body_limit_bytes: 64 * 1024, turn_budget_ms: 0.001 } });
      gw = await startGateway({ http, config, env: { [UPSTREAM_KEY_ENV]: OPENAI_MOCK_KEY } });
      key = await gw.key('acme');
      client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
    });
    after(async () => { await gw.close(); await mock.close(); });

    test('every request of a burst arriving at once is answered, JSON and streams alike, and traced once', async () => {
      mock.fault = 'none';
      assert.equal((await client.chat.completions.create({ model: 'up-model', messages: [{ role: 'user', content: 'warm' }] })).choices[0]!.message.content, 'warm');
      const deferredBefore = await deferredCount(gw);
      const tracesBefore = gw.traces.rows.length;
      const N = 120;
      const answers = await burst(gw.url, key, N);
      answers.forEach((a, i) => {
        assert.match(a.head, /^HTTP\/1\.1 200/, a.head);
        if (i % 2) assert.equal(JSON.parse(a.body).choices[0].message.content, `burst ${i}`);
        else {
          const text = a.body.split('\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)).choices[0]?.delta?.content ?? '').join('');
          assert.equal(text, `burst ${i}`);
          assert.ok(a.body.includes('data: [DONE]'));
        }
      });
      // uWS hands over every request that arrived in one turn; node:http was seen to take them
      // one per turn already (50 requests written at once on open connections: none deferred,
      // about 0.5 ms apart), so there the budget has nothing to spread.
      const deferred = await deferredCount(gw) - deferredBefore;
      if (http === 'uws') assert.ok(deferred > 0, 'the burst went past the budget');
      assert.ok(await eventually(() => gw.traces.rows.length - tracesBefore >= N, 5_000), "every request is traced");
      assert.equal(gw.traces.rows.length - tracesBefore, N);
      assert.equal(new Set(gw.traces.rows.slice(tracesBefore).map((t) => t.request_id)).size, N);
    });
  });
}

/**
 * N requests written at once on N connections opened beforehand, so that they
 * reach the gateway together (clients' own connection pools spread them out).
 * Odd ones are JSON, even ones streams; each connection closes after its answer.
 */
async function burst(base: string, key: string, n: number): Promise<Array<{ head: string; body: string }>> {
  const u = new URL(base);
  const sockets = await Promise.all(Array.from({ length: n }, () => new Promise<Socket>((ok, fail) => {
    const s = connect(Number(u.port), u.hostname, () => ok(s));
    s.once('error', fail);
  })));
  const answers = sockets.map((s) => new Promise<Buffer>((ok, fail) => {
    const parts: Buffer[] = [];
    s.on('data', (c: Buffer) => parts.push(c));
    s.once('error', fail);
    s.once('end', () => ok(Buffer.concat(parts)));
  }));
  sockets.forEach((s, i) => {
    const body = JSON.stringify({ model: 'up-model', stream: i % 2 === 0, messages: [{ role: 'user', content: `burst ${i}` }] });
    s.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: ${u.host}\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  });
  return (await Promise.all(answers)).map((raw) => {
    const text = raw.toString('utf8');
    const at = text.indexOf('\r\n\r\n');
    const head = text.slice(0, at);
    const rest = text.slice(at + 4);
    return { head, body: /^transfer-encoding: *chunked/im.test(head) ? dechunk(rest) : rest };
  });
}

/** The body of a chunked transfer encoding. */
function dechunk(text: string): string {
  let out = '';
  for (let at = 0; ;) {
    const eol = text.indexOf('\r\n', at);
    const size = parseInt(text.slice(at, eol), 16);
    if (!size) return out;
    out += text.slice(eol + 2, eol + 2 + size);
    at = eol + 2 + size + 2;
  }
}

async function deferredCount(gw: TestGateway): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  return Number(/^sluice_requests_deferred_total (\d+)/m.exec(text)?.[1] ?? NaN);
}
