// A migration is applied once per version number (schema_migrations' key), so two files with one
// number would leave one of them unapplied on every database that had the other.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readMigrations } from '../src/store/migrate.js';

test('migrations are numbered 1 to N, each number once', () => {
  const versions = readMigrations().map((m) => m.version);
  assert.deepEqual(versions, versions.map((_, i) => i + 1));
});
