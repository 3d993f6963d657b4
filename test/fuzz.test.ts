// Property-based fuzzing of the whole gateway, on both front ends: hostile
// paths, queries, headers, keys and bodies against a real gateway whose
// organisation has the in-process mock models, an OpenAI-compatible mock
// upstream and a DLP policy. The property: every request gets a complete
// answer that is a JSON error with a 4xx (or a provider's failure passed on as
// upstream_error, or the 501 for a method no path takes), or a valid success;
// never a 500, never a dropped connection;
// and the gateway serves the next ordinary request.
//
// CI runs a fixed seed; FUZZ_SEED and FUZZ_RUNS explore further locally.
// Whatever it finds becomes a row in test/bad-input.test.ts.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ERRORS } from '../src/errors.js';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import type { FaultMode } from './mocks/mock-server.js';
import { HTTP_KINDS, startGateway, type TestGateway } from './helpers/gateway.js';
import { oneUpstreamConfig, UPSTREAM_KEY_ENV } from './helpers/fixtures.js';
import { fuzzRequest, type FuzzRequest } from './helpers/fuzz-arbitraries.js';
import { stopTestPostgres } from './helpers/pg.js';
import { rawRequest, type Raw } from './helpers/raw-http.js';

after(stopTestPostgres);

const CI_SEED = 0x51_1ce;
const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : process.env.CI ? CI_SEED : Date.now() % 2 ** 31;
const numRuns = Number(process.env.FUZZ_RUNS ?? 2000);

const describeRequest = (r: FuzzRequest) =>
  `${r.method} ${r.path} headers=${JSON.stringify(r.headers).slice(0, 300)} body=${r.body ? JSON.stringify(r.body.toString('latin1').slice(0, 300)) : '-'}`;

/** The property for one answer; returns what is wrong, or undefined. */
export function judge(req: FuzzRequest, r: Raw, http: string): string | undefined {
  const head = req.method.toUpperCase() === 'HEAD';
  // uWS's native parser takes only origin-form targets ('/...'); anything else (`*`, absolute
  // URLs) it refuses with its own 505 page before sluice sees a byte. Not ours to answer.
  if (http === 'uws' && !req.path.startsWith('/') && r.status === 505) return undefined;
  if (head && r.raw.length) return 'a HEAD answer carried a body';
  if (r.status >= 500) {
    // A provider's own failure is passed on as upstream_error; every other 5xx is the gateway's.
    if (head) return r.status === 502 || r.status === 504 ? undefined : `HEAD answered ${r.status}`;
    if (r.body?.error?.type === 'upstream_error' && (r.status === 502 || r.status === 504)) return undefined;
    // A method no path takes (RFC 9110 9.1): the catalogue's 501, as JSON; an answer about the request, not a fault.
    if (r.status === 501 && r.body?.error?.code === 'method_not_implemented' && typeof r.body.request_id === 'string') return undefined;
    return `the gateway answered ${r.status}: ${r.text.slice(0, 300)}`;
  }
  if (r.status < 200 || (r.status >= 300 && r.status < 400)) return `unexpected status ${r.status}`;
  if (r.status >= 400) {
    if (head) return undefined;
    if (!String(r.headers['content-type']).startsWith('application/json')) return `a ${r.status} that is not JSON: ${r.text.slice(0, 200)}`;
    const code = r.body?.error?.code as keyof typeof ERRORS | undefined;
    if (!code || !(code in ERRORS)) return `an error without a catalogue code: ${r.text.slice(0, 300)}`;
    if (code !== 'upstream_error' && ERRORS[code].status !== r.status) return `${code} answered ${r.status}, the catalogue says ${ERRORS[code].status}`;
    if (typeof r.body.request_id !== 'string') return 'an error without request_id';
    return undefined;
  }
  const type = String(r.headers['content-type'] ?? '');
  if (type.startsWith('application/json') && !head && r.text && r.body === undefined) return `a success whose JSON does not parse: ${r.text.slice(0, 200)}`;
  if (type.startsWith('text/event-stream')) {
    // A stream ends with the error event, or finishes: chat with [DONE], Responses with its terminal typed event.
    const ev = /event: error\ndata: (.*)\n/.exec(r.text);
    if (ev) {
      const e = JSON.parse(ev[1]!) as { error: { code: string } };
      if (e.error.code === 'gateway_error') return `a stream ended with gateway_error: ${ev[1]}`;
    } else if (!r.text.trimEnd().endsWith('data: [DONE]') && !/event: response\.(completed|incomplete)\ndata: [^\n]*\s*$/.test(r.text)) {
      return `a stream that neither finished nor ended with the error event: ${r.text.slice(-200)}`;
    }
  }
  return undefined;
}

for (const http of HTTP_KINDS) {
  describe(`fuzz: hostile requests get a complete 4xx or a valid answer: ${http}`, () => {
    let mock: OpenAIMock;
    let gw: TestGateway;
    let key: string;

    before(async () => {
      mock = await startOpenAIMock();
      const config = oneUpstreamConfig(mock.url, {
        organizations: [{ id: 'acme', models: ['mock-echo', 'mock-embed', 'up-model', 'up-small'], policy: {} }],
      });
      gw = await startGateway({ http, config, env: { [UPSTREAM_KEY_ENV]: OPENAI_MOCK_KEY } });
      key = await gw.key('acme');
    });
    after(async () => { await gw.close(); await mock.close(); });

    test(`${numRuns} runs, seed ${seed}`, async (t) => {
      t.diagnostic(`FUZZ_SEED=${seed} FUZZ_RUNS=${numRuns}`);
      // What the runs reached, so that a generator that stops getting past the router shows up.
      const seen = new Map<string, number>();
      // The upstream misbehaves now and then too, so the provider-failure paths are fuzzed with the rest.
      const fault = fc.constantFrom<FaultMode>('none', 'none', 'none', 'none', 'error-before-first-byte', 'drop-mid-stream', 'error-event-mid-stream');
      const details = await fc.check(fc.asyncProperty(fuzzRequest(key), fault, async (req, f) => {
        mock.fault = f;
        // uWS refuses non-origin-form targets with a page that has a body, even to a HEAD (see judge()).
        fc.pre(!(http === 'uws' && !req.path.startsWith('/') && req.method === 'HEAD'));
        let r: Raw;
        try {
          r = await rawRequest(gw.url, req.method, req.path, req.headers, req.body);
        } catch (err) {
          throw new Error(`connection dropped (${(err as Error).message}) on ${describeRequest(req)}`);
        }
        const bucket = `${req.path.split('?')[0]!.slice(0, 24)} ${r.status}${r.status < 500 && r.body?.error ? ` ${r.body.error.code}` : ''}`;
        seen.set(bucket, (seen.get(bucket) ?? 0) + 1);
        const wrong = judge(req, r, http);
        if (wrong) throw new Error(`${wrong}\n  on ${describeRequest(req)}`);
        mock.fault = 'none';
        const next = await rawRequest(gw.url, 'GET', '/v1/models', { authorization: `Bearer ${key}` });
        assert.equal(next.status, 200, `the next ordinary request failed after ${describeRequest(req)}`);
      }), { seed, numRuns, endOnFailure: true });
      if (process.env.FUZZ_STATS) t.diagnostic([...seen].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${n} ${k}`).join('\n'));
      // fast-check's own report prints the whole counterexample, megabytes of it; this one is readable.
      if (details.failed) {
        const message = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
        assert.fail(`${message.slice(0, 2000)}\n  reproduce with FUZZ_SEED=${seed} (path ${details.counterexamplePath}, after ${details.numRuns} runs, shrunk ${details.numShrinks} times)`);
      }
    });
  });
}
