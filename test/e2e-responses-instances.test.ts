// previous_response_id across two gateway instances sharing Postgres and
// Redis, as behind a load balancer: the first instance stores its response
// after the reply, fire and forget, and the next request of the tool loop
// lands on the other one at once. A test client holds a lock on the table so
// that the first write cannot land before the second request reads; only the
// pending marker in Redis makes the second instance wait for it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import OpenAI from 'openai';
import pg from 'pg';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import { startGateway, type TestGateway } from './helpers/gateway.js';
import { UPSTREAM_KEY_ENV, chatAndNativeUpstreams } from './helpers/fixtures.js';
import { stopTestPostgres } from './helpers/pg.js';

const REDIS_URL = process.env.REDIS_URL;
// Locally without Redis the suite is skipped; in CI it must run (and fails without REDIS_URL).
const skip = !REDIS_URL && !process.env.CI ? 'REDIS_URL is not set' : false;

after(stopTestPostgres);

describe('responses: previous_response_id on another instance', { skip }, () => {
  let mock: OpenAIMock;
  let a: TestGateway;
  let b: TestGateway;
  let onA: OpenAI;
  let onB: OpenAI;
  let pgc: pg.Client | undefined;

  before(async () => {
    mock = await startOpenAIMock();
    const config = {
      redis: { key_prefix: `sluice-test-${randomBytes(4).toString('hex')}:` },
      ...chatAndNativeUpstreams(mock.url),
      organizations: [{ id: 'acme', models: ['up-model', 'nat-model'] }],
    };
    a = await startGateway({ env: { [UPSTREAM_KEY_ENV]: OPENAI_MOCK_KEY }, config, redisUrl: REDIS_URL });
    b = await startGateway({ config, redisUrl: REDIS_URL, database: a.db });
    const key = await a.key('acme');
    onA = new OpenAI({ baseURL: `${a.url}/v1`, apiKey: key, maxRetries: 0 });
    onB = new OpenAI({ baseURL: `${b.url}/v1`, apiKey: key, maxRetries: 0 });
  });
  after(async () => { await pgc?.end(); await b?.close(); await a?.close(); await mock?.close(); });

  /** Holds back every write to the responses table (reads go on) until the returned release is called. */
  async function holdWrites(): Promise<() => Promise<void>> {
    pgc = new pg.Client({ connectionString: a.db.url });
    await pgc.connect();
    await pgc.query('BEGIN');
    await pgc.query('LOCK TABLE responses IN SHARE ROW EXCLUSIVE MODE');
    const c = pgc;
    return async () => { await c.query('COMMIT'); await c.end(); pgc = undefined; };
  }

  /** Settles `p` as a value or an error, noting whether it had settled before `ms` passed. */
  async function earlyOrLate<T>(p: Promise<T>, ms: number): Promise<boolean> {
    let done = false;
    p.then(() => { done = true; }, () => { done = true; });
    await new Promise((ok) => setTimeout(ok, ms));
    return done;
  }

  test('translated: the chained request on B waits for the row A is still writing, then sees the conversation', async () => {
    const release = await holdWrites();
    try {
      const first = await onA.responses.create({ model: 'up-model', input: 'first turn' });
      const second = onB.responses.create({ model: 'up-model', input: 'second turn', previous_response_id: first.id });
      assert.equal(await earlyOrLate(second, 300), false, 'B waits while the row is pending');
      await release();
      const r = await second;
      assert.equal(r.output_text, 'second turn');
      const sent = mock.requests.at(-1)!.body.messages.map((m: any) => m.content);
      assert.deepEqual(sent, ['first turn', 'first turn', 'second turn']);
    } finally { await pgc?.query('ROLLBACK').catch(() => {}); }
  });

  test('native, streamed: GET and a chained request on B find the response A has just streamed', async () => {
    const release = await holdWrites();
    try {
      const stream = onA.responses.stream({ model: 'nat-model', input: 'streamed turn' });
      const first = await stream.finalResponse();
      const got = onB.responses.retrieve(first.id);
      const chained = onB.responses.create({ model: 'nat-model', input: 'next', previous_response_id: first.id });
      assert.equal(await earlyOrLate(got, 300), false);
      await release();
      assert.equal((await got).output_text, 'streamed turn');
      assert.equal((await chained).output_text, 'next');
      assert.equal(mock.requests.at(-1)!.body.previous_response_id, first.id);
    } finally { await pgc?.query('ROLLBACK').catch(() => {}); }
  });

  test('no marker, no wait: an unknown id, or one not stored, is 404 at once on B', async () => {
    const unstored = await onA.responses.create({ model: 'up-model', input: 'forget me', store: false });
    for (const id of ['resp_never_made', unstored.id]) {
      const t0 = Date.now();
      await assert.rejects(onB.responses.retrieve(id), (e: any) => e.status === 404);
      assert.ok(Date.now() - t0 < 1_000, `${id} answered in ${Date.now() - t0} ms`);
    }
  });
});
