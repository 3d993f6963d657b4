// The catalogue and the README's error table stay in step: every code is
// documented with its status, and the table names no code that does not exist.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ERRORS, GatewayError, errorBody, sseErrorEvent } from '../src/errors.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const documented = new Map([...readme.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \|/gm)].map((m) => [m[1]!, Number(m[2])]));

test('every error code is in the README with its status', () => {
  for (const [code, spec] of Object.entries(ERRORS)) {
    assert.equal(documented.get(code), spec.status, `README row for ${code}`);
  }
});

// docs/api.md is the API reference a clone has: every code there too, with its status, and no stray ones.
const apiDoc = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
const inApiDoc = new Map([...apiDoc.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \|/gm)].map((m) => [m[1]!, Number(m[2])]));

test('every error code is in docs/api.md with its status', () => {
  for (const [code, spec] of Object.entries(ERRORS)) assert.equal(inApiDoc.get(code), spec.status, `docs/api.md row for ${code}`);
  for (const code of inApiDoc.keys()) assert.ok(code in ERRORS, `docs/api.md names ${code}, which the catalogue lacks`);
});

test('the README links the API reference, not a file outside the repository', () => {
  assert.ok(readme.includes('](docs/api.md'));
  assert.ok(!readme.includes('../shared/'));
});

test('the README documents no code the catalogue lacks', () => {
  for (const code of documented.keys()) assert.ok(code in ERRORS, code);
});

test('the contract\'s codes keep the contract\'s statuses', () => {
  assert.equal(ERRORS.unauthorized.status, 401);
  assert.equal(ERRORS.not_found.status, 404);
  assert.equal(ERRORS.invalid_request.status, 400);
  assert.equal(ERRORS.embeddings_unsupported.status, 400);
});

test('error bodies: JSON in the SDK\'s shape; the SSE event as section 6 has it', () => {
  const body = JSON.parse(errorBody(new GatewayError('invalid_request', 'bad', { param: 'model' }), 'req_1'));
  assert.deepEqual(body, { error: { message: 'bad', type: 'invalid_request_error', param: 'model', code: 'invalid_request' }, request_id: 'req_1' });
  const ev = sseErrorEvent('upstream_error', 'boom', 'req_2');
  assert.ok(ev.startsWith('event: error\ndata: ') && ev.endsWith('\n\n'));
  assert.deepEqual(JSON.parse(ev.slice('event: error\ndata: '.length)), { error: { code: 'upstream_error', message: 'boom', type: 'gateway_error' }, request_id: 'req_2' });
});
