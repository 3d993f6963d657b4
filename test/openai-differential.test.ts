// The gateway as a lossless pipe: every OpenAI transcript is replayed by the
// mock upstream, and what the caller receives is compared field for field with
// what the upstream sent. Only id (the gateway's chatcmpl_ id) and model (the
// resolved model) may differ; usage is the upstream's whenever it sent one.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import { HTTP_KINDS, startGateway, type TestGateway } from './helpers/gateway.js';
import { oneUpstreamConfig, readSse, UPSTREAM_KEY_ENV } from './helpers/fixtures.js';
import { loadOpenAIFixtures, upstreamChunks, type OpenAIFixture } from './helpers/openai-fixtures.js';
import { stopTestPostgres } from './helpers/pg.js';

after(stopTestPostgres);

const MODEL = 'up-model';
const fixtures = loadOpenAIFixtures();
const successes = fixtures.filter((f) => (f.response.status ?? 200) === 200);
const rateLimited = fixtures.find((f) => f.name === 'rate-limited')!;

/** A moderation rule that never matches: the buffered path runs, and blocks nothing. */
const neverMatches = { mode: 'buffered' as const, rules: [{ name: 'never', category: 'test', terms: ['zqxj-never-said'] }] };
const ORGS = [
  { id: 'acme', label: 'no policy', models: ['up-model'] },
  { id: 'buffered', label: 'buffered moderation', models: ['up-model'], policy: { dlp: { detectors: [] }, shield: { builtin: false }, moderation: neverMatches } },
  { id: 'stored', label: 'payloads stored', models: ['up-model'], store_payloads: true },
];

/** `obj` with the upstream's id and model put back, keys in their original places. */
const withUpstreamHead = (obj: any, up: any) => ({ ...obj, id: up.id, model: up.model });

function assertUsage(u: any): void {
  assert.ok(u && typeof u === 'object', 'usage is present');
  for (const k of ['prompt_tokens', 'completion_tokens', 'total_tokens']) assert.equal(typeof u[k], 'number', `usage.${k}`);
  assert.equal(u.total_tokens, u.prompt_tokens + u.completion_tokens);
}

test('every transcript kind is present', () => {
  const names = new Set(fixtures.map((f) => f.name));
  for (const base of ['tool-call', 'parallel-tool-calls', 'refusal', 'logprobs', 'reasoning', 'content-filter', 'n2', 'annotations', 'usage-details', 'future-fields']) {
    assert.ok(names.has(base) && names.has(`${base}-stream`), base);
  }
  assert.ok(rateLimited);
});

for (const http of HTTP_KINDS) {
  describe(`OpenAI transcripts through the gateway over ${http}`, () => {
    let mock: OpenAIMock;
    let gw: TestGateway;
    const keys: Record<string, string> = {};
    let key = '';

    before(async () => {
      mock = await startOpenAIMock();
      const organizations = ORGS.map(({ label: _l, ...org }) => org);
      // store_payloads needs a signing secret for payload links; any 32+ characters do here.
      const env = { [UPSTREAM_KEY_ENV]: OPENAI_MOCK_KEY, SLUICE_PAYLOAD_SECRET: 'differential-test-signing-secret-0123456789' };
      // One attempt per call: each transcript is one exchange, and its 429 would otherwise be retried after its retry-after.
      const providers = { up: { kind: 'openai' as const, base_url: `${mock.url}/v1`, api_key_env: UPSTREAM_KEY_ENV, retry: { max_attempts: 1 } } };
      gw = await startGateway({ http, config: oneUpstreamConfig(mock.url, { organizations, providers }), env });
      for (const org of ORGS) keys[org.id] = await gw.key(org.id);
    });
    after(async () => { await gw.close(); await mock.close(); });

    async function replay(f: OpenAIFixture, headers: Record<string, string> = {}): Promise<{ res: Response; body: Record<string, unknown> }> {
      mock.replay = f.response;
      try {
        const body = { ...f.request, model: MODEL };
        const res = await fetch(`${gw.url}/v1/chat/completions`, {
          method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body),
        });
        // Read the whole answer while the transcript is still set.
        const text = await res.text();
        return { res: new Response(text, { status: res.status, headers: res.headers }), body };
      } finally { mock.replay = undefined; }
    }

    /** The upstream heard the caller's body unchanged, plus include_usage on streams. */
    function assertForwarded(body: Record<string, unknown>): void {
      const sent = mock.requests.at(-1)!.body;
      const expected = body.stream ? { ...body, stream_options: { ...(body.stream_options as object), include_usage: true } } : body;
      assert.deepEqual(sent, expected);
    }

    for (const org of ORGS) for (const f of successes) {
      // Under moderation a token's alternatives cannot be asked for: the next test replays these transcripts unasked.
      if (org.policy && f.request.top_logprobs) continue;
      test(`${org.label}: ${f.name}: ${f.description}`, async () => {
        key = keys[org.id]!;
        const { res, body } = await replay(f);
        assert.equal(res.status, 200, await res.clone().text());
        assertForwarded(body);
        const rid = res.headers.get('x-request-id')!;
        assert.match(rid, /^req_/);
        const gwId = `chatcmpl_${rid.slice(4)}`;
        for (const [k, v] of Object.entries(f.response.headers ?? {})) {
          if (k.startsWith('x-ratelimit-')) assert.equal(res.headers.get(k), v, `${k} passes back on a 200`);
        }
        if (f.response.json) {
          const text = await res.text();
          const got = JSON.parse(text);
          assert.equal(got.id, gwId);
          assert.equal(got.model, MODEL);
          assert.deepEqual(withUpstreamHead(got, f.response.json), f.response.json);
          // Key order too: the caller's text is the upstream's with id and model replaced in place.
          assert.equal(text, JSON.stringify(withUpstreamHead(f.response.json, got)));
          return;
        }
        const events = await readSse(res);
        assert.equal(events.at(-1), 'data: [DONE]');
        const lines = events.slice(0, -1);
        for (const e of lines) assert.match(e, /^data: /);
        const got = lines.map((e) => JSON.parse(e.slice(6)));
        const up = upstreamChunks(f.response);
        const extra = f.expect?.usage_estimated ? 1 : 0;
        assert.equal(got.length, up.length + extra, 'one caller chunk per upstream chunk');
        got.forEach((c, i) => {
          assert.equal(c.id, gwId, `chunk ${i} id`);
          assert.equal(c.model, MODEL, `chunk ${i} model`);
          if (i < up.length) assert.deepEqual(withUpstreamHead(c, up[i]), up[i], `chunk ${i}`);
        });
        if (extra) {
          const tail = got.at(-1);
          assert.deepEqual(tail.choices, []);
          assertUsage(tail.usage);
          assert.ok(tail.usage.completion_tokens > 0, 'the estimate counts the streamed text');
        } else {
          assert.ok(got.some((c) => c.usage), 'the upstream usage reached the caller');
        }
        if (f.expect?.key_order) {
          // The upstream's own text where it sent text (spaced JSON stays spaced), with only id and model written anew.
          const sent = (f.response.sse ?? []).filter((e) => e.data !== '[DONE]').map((e) => e.data);
          lines.forEach((e, i) => {
            const own = sent[i];
            const expected = typeof own === 'string'
              ? own.replace(/"id":\s*"[^"]*"/, `"id":${JSON.stringify(gwId)}`).replace(/"model":\s*"[^"]*"/, `"model":${JSON.stringify(MODEL)}`)
              : JSON.stringify(withUpstreamHead(up[i]!, got[i]));
            assert.equal(e.slice(6), expected, `chunk ${i} text`);
          });
        }
        if (org.id === 'stored') assertArchived((JSON.parse((await gw.traces.waitFor(rid)).payload!) as { response: unknown }).response, up, gwId);
      });
    }

    /** A streamed answer is archived as the completion its chunks add up to: every member the upstream sent, folded. */
    function assertArchived(archived: any, up: Array<Record<string, any>>, gwId: string): void {
      assert.equal(archived.id, gwId);
      assert.equal(archived.model, MODEL);
      assert.equal(archived.object, 'chat.completion');
      for (const c of up) {
        for (const [k, v] of Object.entries(c)) {
          if (['id', 'model', 'object', 'choices', 'usage'].includes(k) || v === null) continue;
          const last = up.filter((x) => x[k] != null).at(-1)![k];
          assert.deepEqual(archived[k], last, `top-level ${k}`);
        }
        for (const ch of c.choices ?? []) {
          const got = archived.choices.find((x: any) => x.index === ch.index);
          for (const k of Object.keys(ch.delta ?? {})) if (ch.delta[k] != null && k !== 'role') assert.ok(k in got.message, `choice ${ch.index}: delta member ${k}`);
          for (const k of Object.keys(ch)) if (ch[k] != null && k !== 'delta') assert.ok(k in got, `choice ${ch.index}: member ${k}`);
        }
      }
      // Streamed log probabilities add up, token for token.
      const tokens = up.flatMap((c) => (c.choices ?? []).filter((ch: any) => ch.index === 0).flatMap((ch: any) => ch.logprobs?.content ?? []));
      if (tokens.length) assert.deepEqual(archived.choices[0].logprobs.content, tokens);
      const annotations = up.flatMap((c) => (c.choices ?? []).flatMap((ch: any) => ch.delta?.annotations ?? []));
      if (annotations.length) assert.deepEqual(archived.choices[0].message.annotations, annotations);
    }

    test('buffered moderation refuses top_logprobs, and empties the alternatives an upstream sends unasked: every other byte is the upstream\'s', async () => {
      key = keys.buffered!;
      const asking = successes.filter((f) => f.request.top_logprobs);
      assert.ok(asking.some((f) => f.response.json) && asking.some((f) => f.response.sse));
      for (const f of asking) {
        const n = mock.requests.length;
        const { res } = await replay(f);
        assert.equal(res.status, 400, f.name);
        assert.equal(((await res.json()) as any).error.param, 'top_logprobs', f.name);
        assert.equal(mock.requests.length, n, 'refused before any upstream call');
        // Asked with top_logprobs 0, the upstream sends its alternatives all the same.
        const { res: unasked } = await replay({ ...f, request: { ...f.request, top_logprobs: 0 } });
        assert.equal(unasked.status, 200, f.name);
        const emptied = (c: any) => (c.logprobs ? { ...c, logprobs: { ...c.logprobs, content: c.logprobs.content?.map((t: any) => ({ ...t, top_logprobs: [] })) } } : c);
        if (f.response.json) {
          const up = f.response.json as any;
          const got: any = await unasked.json();
          assert.ok(up.choices.some((c: any) => c.logprobs?.content?.some((t: any) => t.top_logprobs.length > 0)), 'the transcript has alternatives');
          assert.deepEqual(withUpstreamHead(got, up), { ...up, choices: up.choices.map(emptied) });
          continue;
        }
        const up = upstreamChunks(f.response) as any[];
        const got = (await readSse(unasked)).slice(0, -1).map((e) => JSON.parse(e.slice(6)));
        assert.ok(up.some((c) => c.choices.some((ch: any) => ch.logprobs?.content?.some((t: any) => t.top_logprobs.length > 0))), 'the transcript has alternatives');
        assert.equal(got.length, up.length, f.name);
        got.forEach((c, i) => assert.deepEqual(withUpstreamHead(c, up[i]), { ...up[i], choices: up[i].choices.map(emptied) }, `chunk ${i}`));
      }
    });

    test('Gateway-Trace adds the block and changes nothing else (JSON and stream)', async () => {
      key = keys.acme!;
      const json = fixtures.find((f) => f.name === 'usage-details')!;
      const r1 = await replay(json, { 'gateway-trace': 'true' });
      const got: any = await r1.res.json();
      assert.equal(got.gateway.request_id, r1.res.headers.get('x-request-id'));
      const { gateway: _g, ...rest } = got;
      assert.deepEqual(withUpstreamHead(rest, json.response.json), json.response.json);

      const stream = fixtures.find((f) => f.name === 'tool-call-stream')!;
      const r2 = await replay(stream, { 'gateway-trace': 'true' });
      const chunks = (await readSse(r2.res)).slice(0, -1).map((e) => JSON.parse(e.slice(6)));
      const up = upstreamChunks(stream.response);
      assert.equal(chunks.length, up.length + 1);
      up.forEach((u, i) => assert.deepEqual(withUpstreamHead(chunks[i], u), u));
      const tail = chunks.at(-1);
      assert.deepEqual(tail.choices, []);
      assert.equal(tail.gateway.model, MODEL);
      assert.deepEqual(tail.usage, up.at(-1)!.usage, 'the block repeats the upstream usage');
    });

    for (const stream of [false, true]) {
      test(`rate-limited${stream ? ' (stream)' : ''}: 429 with retry-after, x-ratelimit-* and the upstream's type, param and code`, async () => {
        key = keys.acme!;
        const { res } = await replay({ ...rateLimited, request: { ...rateLimited.request, stream } });
        assert.equal(res.status, 429);
        assert.match(res.headers.get('content-type')!, /application\/json/);
        const upHeaders = rateLimited.response.headers!;
        for (const [k, v] of Object.entries(upHeaders)) {
          if (k === 'retry-after' || k === 'retry-after-ms' || k.startsWith('x-ratelimit-')) assert.equal(res.headers.get(k), v, k);
        }
        assert.match(res.headers.get('x-request-id')!, /^req_/, "the gateway's own request id, not the upstream's");
        const body: any = await res.json();
        const upError = (rateLimited.response.json as any).error;
        assert.equal(body.error.type, upError.type);
        assert.equal(body.error.param, upError.param);
        assert.equal(body.error.code, upError.code);
        assert.match(body.request_id, /^req_/);
      });
    }
  });
}
