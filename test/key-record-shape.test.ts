// Every function on the request path that reads the caller's key (authentication,
// routing, limits, the relay, the trace) is optimised by V8 for the hidden class
// ("map") of the KeyRecords it has seen. A record looked up from Postgres with
// another map deoptimises them all at once. pg's rows have such moving maps: each
// row is cloned from a per-query template, and the clone's map depends on the
// other queries the process has run. Gateway threads, which run few query shapes,
// refreshed keys into a new map every few seconds, each time a wave of deopts.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import pg from 'pg';
import { createTestDatabase, stopTestPostgres, type TestDatabase } from './helpers/pg.js';
import { hashKey } from '../src/auth/key-format.js';
import { createKey, ensureOrganizations, type KeyRecord } from '../src/store/api-keys-repo.js';
import { postgresKeyLookup } from '../src/store/key-lookup.js';
import { migrate } from '../src/store/migrate.js';

setFlagsFromString('--allow-natives-syntax');
// Compiled after the flag is set, so the natives syntax parses.
const haveSameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;

let db: TestDatabase;
let pool: pg.Pool;

before(async () => {
  db = await createTestDatabase();
  pool = new pg.Pool({ connectionString: db.url, max: 1 });
  await migrate(pool);
});

after(async () => {
  await pool.end();
  await db.drop();
  await stopTestPostgres();
});

test('a key looked up from Postgres has one hidden class, whatever other queries ran before', async () => {
  await ensureOrganizations(pool, ['shape']);
  const { key } = await createKey(pool, 'shape', 'k', 'user');
  const tier = postgresKeyLookup(pool);
  const hash = hashKey(key);
  // What the Redis tier and the tests build: the record's one expected shape.
  const literal: KeyRecord = { id: 'k', organization_id: 'o', name: 'n', role: 'user' };
  const seen: number[] = [];
  for (let round = 0; round < 24; round++) {
    // Queries of other shapes between lookups, some with NULLs, as the pollers and flushes run.
    const columns = Array.from({ length: (round % 7) + 1 }, (_, j) => `${j % 2 ? 'NULL' : "'v'"} AS c${round}_${j}`);
    await pool.query(`SELECT ${columns.join(', ')}`);
    await pool.query('SELECT id, organization_id, name, role FROM api_keys LIMIT 2');
    const rec = await tier.lookup(hash);
    assert.ok(rec);
    assert.equal(rec.organization_id, 'shape');
    if (!haveSameMap(rec, literal)) seen.push(round);
  }
  assert.deepEqual(seen, [], 'rounds whose record had another map');
});
