// joinUrl: a provider's base URL and a path, parsed once and cached by base
// and path, with a bound so that paths carrying model names cannot grow the
// cache without end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { joinUrl } from '../src/providers/url.js';

test('a path joins a base with or without its trailing slash', () => {
  for (const base of ['http://127.0.0.1:9/v1', 'http://127.0.0.1:9/v1/']) {
    const u = joinUrl(base, 'chat/completions');
    assert.deepEqual({ ...u }, { origin: 'http://127.0.0.1:9', path: '/v1/chat/completions', href: 'http://127.0.0.1:9/v1/chat/completions' });
  }
  assert.equal(joinUrl('http://127.0.0.1:9/v1beta', 'models/g:streamGenerateContent?alt=sse').path, '/v1beta/models/g:streamGenerateContent?alt=sse');
});

test('a base and path asked again get the same parse; another base or path its own', () => {
  const u = joinUrl('http://127.0.0.1:9/v1', 'embeddings');
  assert.equal(joinUrl('http://127.0.0.1:9/v1', 'embeddings'), u);
  assert.equal(joinUrl('http://127.0.0.1:10/v1', 'embeddings').origin, 'http://127.0.0.1:10');
  assert.equal(joinUrl('http://127.0.0.1:9/v1', 'models').path, '/v1/models');
});

test('past 10,000 cached URLs the cache starts over, and every answer stays right', () => {
  const first = joinUrl('http://127.0.0.1:9/v1', 'models/m-0:generateContent');
  for (let i = 1; i <= 10_000; i++) {
    const u = joinUrl(i % 2 ? 'http://127.0.0.1:9/v1' : 'http://127.0.0.1:11/v1', `models/m-${i}:generateContent`);
    assert.equal(u.path, `/v1/models/m-${i}:generateContent`);
  }
  const again = joinUrl('http://127.0.0.1:9/v1', 'models/m-0:generateContent');
  assert.notEqual(again, first, 'dropped with the rest when the bound was reached');
  assert.deepEqual({ ...again }, { ...first });
});
