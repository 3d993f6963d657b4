// The shapes of production traffic, which a bench that prices a gateway
// must carry: autocannon alone sends four request headers and node's mock
// answers with five, where the openai SDK sends about sixteen and OpenAI's API
// answers with twenty-odd, and OpenAI's stream chunks carry members a bare
// mock's do not. Each costs a gateway per request (docs/operations.md,
// "Headers as production sends them"), so every bench prices them unless a
// switch turns one off: BENCH_SDK_HEADERS=0 for the requests,
// MOCK_OPENAI_HEADERS=0 for the mock's answers (JSON and streams: OpenAI sends
// a stream the same headers), MOCK_OPENAI_CHUNKS=0 for the chunks, which
// otherwise carry what OpenAI's do: `service_tier` and `system_fingerprint` in
// the head, `logprobs: null`, `usage: null` (sent on every chunk once usage is
// asked for, as sluice asks) and `obfuscation`, random characters of random
// length on every chunk, on by default. Until 2026-11-29 all three were off
// unless set, so `npm run bench` priced shapes no production call has, and
// the README's results were taken with all three set by hand.

/** What the openai SDK (v5, node) sends besides a request's own headers. */
export const SDK_REQUEST_HEADERS: Readonly<Record<string, string>> = {
  accept: 'application/json', 'user-agent': 'OpenAI/JS 5.23.0', 'x-stainless-lang': 'js', 'x-stainless-package-version': '5.23.0',
  'x-stainless-os': 'Linux', 'x-stainless-arch': 'x64', 'x-stainless-runtime': 'node', 'x-stainless-runtime-version': 'v20.20.2',
  'x-stainless-retry-count': '0', 'x-stainless-timeout': '600', 'accept-encoding': 'gzip, deflate',
};

/** What OpenAI's API answers with besides the body's own headers: rate limits, ids, timings, its CDN's. */
export const OPENAI_ANSWER_HEADERS: Readonly<Record<string, string>> = {
  date: 'Sat, 28 Nov 2026 08:00:00 GMT', connection: 'keep-alive', 'access-control-expose-headers': 'X-Request-ID',
  'openai-organization': 'user-bench', 'openai-processing-ms': '312', 'openai-project': 'proj_bench', 'openai-version': '2020-10-01',
  'x-envoy-upstream-service-time': '318', 'x-ratelimit-limit-requests': '10000', 'x-ratelimit-limit-tokens': '30000000',
  'x-ratelimit-remaining-requests': '9999', 'x-ratelimit-remaining-tokens': '29999986', 'x-ratelimit-reset-requests': '6ms',
  'x-ratelimit-reset-tokens': '0s', 'x-request-id': 'req_0123456789abcdef0123456789abcdef', 'strict-transport-security': 'max-age=31536000; includeSubDomains; preload',
  'cf-cache-status': 'DYNAMIC', 'set-cookie': '__cf_bm=abc; path=/; expires=Sat, 28-Nov-26 08:30:00 GMT; domain=.api.openai.com; HttpOnly; Secure; SameSite=None',
  'x-content-type-options': 'nosniff', server: 'cloudflare', 'cf-ray': '8f0123456789abcd-AMS', 'alt-svc': 'h3=":443"; ma=86400',
};

/** The switches, each on unless set to 0, false, off, no or nothing. */
export const SHAPE_SWITCHES = ['BENCH_SDK_HEADERS', 'MOCK_OPENAI_HEADERS', 'MOCK_OPENAI_CHUNKS'] as const;

export function shapeOn(name: (typeof SHAPE_SWITCHES)[number], env: NodeJS.ProcessEnv = process.env): boolean {
  const v = env[name];
  return v === undefined || !/^\s*(0|false|off|no)?\s*$/i.test(v);
}

/** What a run priced, for its header line and result file: the switches turned off, if any. */
export function shapesPriced(env: NodeJS.ProcessEnv = process.env): string {
  const off = SHAPE_SWITCHES.filter((name) => !shapeOn(name, env));
  return off.length ? `production shapes but ${off.map((n) => `${n}=0`).join(', ')}` : 'production shapes';
}

/** The headers every bench request carries besides authorization and content type. */
export const benchRequestHeaders = (): Readonly<Record<string, string>> => (shapeOn('BENCH_SDK_HEADERS') ? SDK_REQUEST_HEADERS : {});

/** The headers the bench mock adds to its answers. */
export const mockAnswerHeaders = (): Readonly<Record<string, string>> => (shapeOn('MOCK_OPENAI_HEADERS') ? OPENAI_ANSWER_HEADERS : {});

/** Whether the mock's stream chunks carry OpenAI's members. */
export const openaiChunks = (): boolean => shapeOn('MOCK_OPENAI_CHUNKS');
