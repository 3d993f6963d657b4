// How provider failures reach the caller: the caller's own mistakes keep their
// status, the gateway's (a refused credential, a provider fault) are 502.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { upstreamStatusError } from '../src/upstream/upstream-errors.js';
import { gemini } from '../src/providers/gemini/index.js';

test('a provider\'s 400/404/422/429 keep their status; 401, 403 and 5xx become 502; 504 stays', () => {
  for (const s of [400, 404, 409, 413, 422, 429]) assert.equal(upstreamStatusError(s, 'x').status, s);
  for (const s of [401, 403, 500, 502, 503]) assert.equal(upstreamStatusError(s, 'x').status, 502);
  assert.equal(upstreamStatusError(504, 'x').status, 504);
  assert.equal(upstreamStatusError(429, 'x').code, 'upstream_error');
});

test('Gemini\'s 400 for a bad API key is the gateway\'s credential, so 502, not the caller\'s 400', () => {
  const body = JSON.stringify({ error: { code: 400, message: 'API key not valid. Please pass a valid API key.', status: 'INVALID_ARGUMENT', details: [{ reason: 'API_KEY_INVALID' }] } });
  assert.equal(gemini.credentialRejected!(400, body), true);
  assert.equal(upstreamStatusError(400, gemini.errorDetails(400, body), gemini.credentialRejected!(400, body)).status, 502);
  const callerMistake = JSON.stringify({ error: { code: 400, message: 'Invalid value at generation_config.temperature', status: 'INVALID_ARGUMENT' } });
  assert.equal(gemini.credentialRejected!(400, callerMistake), false);
});
