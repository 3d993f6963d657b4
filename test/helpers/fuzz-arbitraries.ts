// fast-check generators of hostile HTTP requests for test/fuzz.test.ts. Each
// one stays within what a real client can put on the wire through node:http
// (no CR/LF in headers, path bytes 0x21-0xff), and is otherwise as nasty as
// it can be: broken escapes, wrong JSON types in every field, invalid UTF-8.
import fc from 'fast-check';

export interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer | undefined;
}

const ESCAPES = ['%', '%2', '%G1', '%00', '%0A', '%7F', '%41', '%2F', '%25', '%C0%AF', '%C0%80', '%E0%80%AF', '%ED%A0%80', '%F4%90%80%80', '%FF%FE', '%E0%A4%A', '%E2%82%AC', '%F0%9F%98%80', '%20'];
// Latin-1 characters go out as single raw bytes 0x80-0xff, i.e. invalid UTF-8 in the request line.
const RAW = ['a', 'Z', '0', '-', '_', '.', '..', '~', ':', '@', '!', '$', '&', "'", '(', ')', '*', '+', ',', ';', '=', '\u00ff', '\u00c3', '\u0080', 'é'];

const segment = fc.array(fc.oneof(fc.constantFrom(...ESCAPES), fc.constantFrom(...RAW), fc.stringMatching(/^[a-z0-9_]{1,12}$/)), { maxLength: 6 })
  .map((parts) => parts.join(''));

const ID_ROUTES = ['/v1/api-keys/', '/v1/routes/', '/v1/traces/', '/v1/payloads/', '/v1/responses/', '/ui/'];
const FIXED = ['/v1/chat/completions', '/v1/embeddings', '/v1/models', '/v1/api-keys', '/v1/routes', '/v1/traces', '/v1/responses', '/v1/usage', '/healthz', '/readyz', '/metrics', '/ui', '/ui/',
  '/', '/v1', '/v1/', '//v1/models', '/v1/chat/completions/', '/V1/MODELS'];

const pathOnly = fc.oneof(
  fc.constantFrom(...FIXED),
  fc.tuple(fc.constantFrom(...ID_ROUTES), segment).map(([p, s]) => p + s),
  fc.array(segment, { minLength: 1, maxLength: 5 }).map((s) => `/${s.join('/')}`),
  fc.constantFrom('*', '/' + 'a'.repeat(3000), '/v1/traces/' + '%00'.repeat(200)),
);

const QUERY_KEYS = ['limit', 'starting_after', 'status', 'provider', 'enabled', 'expires', 'sig', 'model', 'range', 'bucket', 'end', 'key', 'group_by', 'order', 'after', ''];
const queryValue = fc.oneof(fc.constantFrom(...ESCAPES), fc.constantFrom('-1', '0', '1', '200', '201', '1e3', 'NaN', 'true', 'false', '999999999999999999999', '',
  '1h', '24h', '7d', '30d', 'minute', 'hour', 'day', 'model', 'key', '2026-01-31T12:00:00Z', '2026-13-45T99:99Z', '0000-01-01T00:00Z'), segment);
const query = fc.array(fc.tuple(fc.constantFrom(...QUERY_KEYS), queryValue, fc.boolean()), { maxLength: 5 })
  .map((pairs) => pairs.map(([k, v, eq]) => (eq ? `${k}=${v}` : k)).join('&'));

export const pathAndQuery = fc.tuple(pathOnly, fc.option(query, { nil: undefined }))
  .map(([p, q]) => (q === undefined ? p : `${p}?${q}`));

/** Header values node:http will send: no CR, LF or NUL; Latin-1 allowed. */
const headerValue = fc.oneof(
  fc.string({ maxLength: 40 }).map((s) => s.replace(/[\u0000-\u0008\u000a-\u001f\u007f]/g, '')),
  fc.constantFrom('', ' ', 'true', 'TRUE', 'false', '1', 'yes', '\u00ff\u00fe', 'é'),
  fc.integer({ min: 0, max: 3000 }).map((n) => 'x'.repeat(n)),
);

export function authorization(key: string): fc.Arbitrary<string | undefined> {
  return fc.oneof(
    fc.constant(`Bearer ${key}`),
    fc.constant(`Bearer ${key}`),
    fc.constant(undefined),
    fc.constantFrom('', 'Bearer', 'Bearer ', 'Bearer  ', 'bearer x', 'Basic dXNlcjpwYXNz', 'Token abc', `bearer ${key}`, `Bearer ${key}x`, `Bearer ${key.slice(0, -1)}`,
      `Bearer  ${key}`, `Bearer ${key} `, `${key}`, 'Bearer sk-sluice-', 'Bearer sk-sluice-\u00ff\u00ff', `Bearer ${'a'.repeat(2000)}`, `Bearer sk-sluice-${'0'.repeat(200)}`),
    headerValue.map((v) => `Bearer ${v}`),
  );
}

const extraHeaders = fc.dictionary(
  fc.oneof(fc.stringMatching(/^x-[a-z0-9-]{1,20}$/), fc.constantFrom('gateway-trace', 'gateway-dry-run', 'content-type', 'accept', 'accept-encoding', 'x-request-id', 'expect', 'transfer-encoding-x', 'origin', 'cookie', 'host')),
  headerValue,
  { maxKeys: 6 },
);

// ---- bodies ----

const hugeNumber = fc.constantFrom('1e999999', '-1e999999', '9'.repeat(400), '-0', '0.0000000000000000000000001', '1.7976931348623157e309', '123456789012345678901234567890');
const weird: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom(null, true, false, 0, -1, 1.5, 2 ** 53 + 1, -(2 ** 31), '', 'auto', '\u0000', '\ud800', [], {}, [[[]]], { '': null }, { __proto__: { x: 1 } }, { constructor: 1 }, { toString: 'x' }),
  fc.integer({ min: 0, max: 70_000 }).map((n) => 'y'.repeat(n)),
);

/** Replaces (or deletes) one field somewhere in a valid body with a value of the wrong shape. */
function mutate(base: Record<string, unknown>, paths: string[][]): fc.Arbitrary<Record<string, unknown>> {
  return fc.tuple(fc.constantFrom(...paths), weird, fc.boolean()).map(([path, value, drop]) => {
    const copy = structuredClone(base);
    let node: any = copy;
    for (const k of path.slice(0, -1)) {
      if (typeof node[k] !== 'object' || node[k] === null) node[k] = {};
      node = node[k];
    }
    const last = path.at(-1)!;
    if (drop) delete node[last];
    // A member of its own, as JSON.parse makes it: an assignment to "__proto__" would set the prototype.
    else Object.defineProperty(node, last, { value, enumerable: true, writable: true, configurable: true });
    return copy;
  });
}

const chatBase = fc.record({
  model: fc.constantFrom('mock-echo', 'up-model', 'auto', 'up-alias'),
  messages: fc.constant([{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hello there' }]),
  stream: fc.boolean(),
});
const CHAT_PATHS = [['model'], ['messages'], ['messages', '0'], ['messages', '1'], ['messages', '1', 'role'], ['messages', '1', 'content'], ['messages', '1', 'content', '0'],
  ['messages', '1', 'name'], ['stream'], ['stream_options'], ['stream_options', 'include_usage'], ['max_tokens'], ['max_completion_tokens'], ['temperature'], ['top_p'],
  ['n'], ['stop'], ['tools'], ['tool_choice'], ['response_format'], ['response_format', 'type'], ['user'], ['seed'], ['logit_bias'], ['metadata'], ['gateway'],
  ['messages', '1', '__proto__'], ['constructor'], ['__proto__']];
/** Members named as an object's prototype has them: tables indexed by a caller's names have found Object.prototype's. */
const PROTOTYPE_NAMES = [['__proto__'], ['constructor'], ['toString'], ['hasOwnProperty']];
const EMBED_PATHS = [['model'], ['input'], ['input', '0'], ['encoding_format'], ['dimensions'], ['user'], ...PROTOTYPE_NAMES];
const ROUTE_PATHS = [['name'], ['priority'], ['enabled'], ['match'], ['match', 'requested_model'], ['match', 'model'], ['action_kind'], ['action'], ['action', 'provider'], ['action', 'model'], ['id'], ['created_at']];
const KEY_PATHS = [['name'], ['role'], ['organization_id'], ['limits'], ['limits', 'rpm'], ['limits', 'tpm'], ['limits', 'budget_usd'], ['limits', 'budget_usd', 'amount'], ['limits', 'budget_usd', 'period']];
const RESPONSES_PATHS = [['model'], ['input'], ['input', '0'], ['input', '0', 'type'], ['input', '0', 'content'], ['input', '0', 'content', '0'], ['input', '0', 'role'], ['instructions'], ['stream'],
  ['tools'], ['tool_choice'], ['text'], ['text', 'format'], ['max_output_tokens'], ['temperature'], ['reasoning'], ['store'], ['previous_response_id'], ['metadata'], ['include'], ['truncation'],
  ...PROTOTYPE_NAMES];

const chatBody = chatBase.chain((b) => fc.oneof(fc.constant(b as Record<string, unknown>), mutate(b, CHAT_PATHS), mutate(b, CHAT_PATHS).chain((m) => mutate(m, CHAT_PATHS))));
const embedBody = fc.record({ model: fc.constantFrom('mock-embed', 'up-model', 'auto'), input: fc.oneof(fc.constant('hi'), fc.constant(['a', 'b'])) })
  .chain((b) => fc.oneof(fc.constant(b as Record<string, unknown>), mutate(b, EMBED_PATHS)));
const routeBody = fc.record({
  name: fc.stringMatching(/^[a-z]{1,8}$/), priority: fc.integer({ min: -5, max: 5 }), enabled: fc.boolean(),
  match: fc.record({ requested_model: fc.constantFrom('fuzz-model', 'auto', 'x') }),
  action_kind: fc.constantFrom('pin', 'auto'), action: fc.constant({ provider: 'mock', model: 'mock-echo' }),
}).chain((b) => mutate(b, ROUTE_PATHS));
const keyBody = fc.record({ name: fc.string({ maxLength: 10 }), role: fc.constantFrom('admin', 'user'), limits: fc.constant({ rpm: 100, budget_usd: { amount: 5, period: 'day' } }) })
  .chain((b) => fc.oneof(fc.constant(b as Record<string, unknown>), mutate(b, KEY_PATHS)));
const responsesBody = fc.record({
  model: fc.constantFrom('mock-echo', 'up-model', 'auto'),
  input: fc.constantFrom<unknown>('hello there', [{ role: 'user', content: [{ type: 'input_text', text: 'hi' }] }],
    [{ type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' }, { type: 'function_call_output', call_id: 'c1', output: 'ok' }]),
  stream: fc.boolean(),
}).chain((b) => fc.oneof(fc.constant(b as Record<string, unknown>), mutate(b, RESPONSES_PATHS), mutate(b, RESPONSES_PATHS).chain((m) => mutate(m, RESPONSES_PATHS))));

const json = (v: unknown) => Buffer.from(JSON.stringify(v));

const badBytes = fc.oneof(
  fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)),
  fc.constantFrom(
    Buffer.from([0x7b, 0x22, 0x6d, 0x6f, 0x64, 0x65, 0x6c, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]), // {"model":"\xff\xfe"}
    Buffer.from('{"model":"mock-echo","messages":[{"role":"user","content":"\xed\xa0\x80"}]}', 'latin1'), // a lone surrogate, CESU style
    Buffer.from('{"model":"mock-echo","messages":[{"role":"user","content":"\\ud800"}]}'), // a lone surrogate escape
    Buffer.from('\ufeff{"model":"mock-echo"}'),
  ),
);
const nonJson = fc.oneof(
  fc.constantFrom('', ' ', 'null', '[]', '"x"', '1', 'true', '{', '}', '{"a":}', '{"model":"mock-echo",}', 'model=mock-echo', 'NaN', '{"a":1}{"b":2}', '\u0000'),
  fc.integer({ min: 1, max: 5000 }).map((n) => '['.repeat(n) + ']'.repeat(n)),
  fc.integer({ min: 1, max: 5000 }).map((n) => '{"a":'.repeat(n) + '1' + '}'.repeat(n)),
  fc.integer({ min: 1, max: 3000 }).map((n) => `{"model":"mock-echo","messages":${'['.repeat(n)}${']'.repeat(n)}}`),
  hugeNumber.map((n) => `{"model":"mock-echo","max_tokens":${n},"messages":[{"role":"user","content":"x"}]}`),
  hugeNumber.map((n) => `{"limit":${n},"priority":${n}}`),
).map((s) => Buffer.from(s));

export const body = fc.oneof(
  { weight: 4, arbitrary: chatBody.map(json) },
  { weight: 2, arbitrary: embedBody.map(json) },
  { weight: 2, arbitrary: routeBody.map(json) },
  { weight: 1, arbitrary: keyBody.map(json) },
  { weight: 2, arbitrary: responsesBody.map(json) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map(json) },
  { weight: 2, arbitrary: nonJson },
  { weight: 1, arbitrary: badBytes },
);

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'POST', 'POST', 'TRACE', 'PROPFIND', 'get'];


/** A request aimed at a real endpoint with the right method, so that most runs get past the router and auth. */
const aimed: fc.Arbitrary<{ method: string; path: string; body: Buffer | undefined }> = fc.oneof(
  { weight: 5, arbitrary: fc.tuple(fc.option(query, { nil: undefined, freq: 5 }), chatBody.map(json)).map(([q, b]) => ({ method: 'POST', path: `/v1/chat/completions${q ? `?${q}` : ''}`, body: b })) },
  { weight: 2, arbitrary: fc.oneof(chatBody.map(json), nonJson, badBytes).map((b) => ({ method: 'POST', path: '/v1/chat/completions', body: b })) },
  { weight: 3, arbitrary: fc.oneof(embedBody.map(json), nonJson, badBytes).map((b) => ({ method: 'POST', path: '/v1/embeddings', body: b })) },
  { weight: 2, arbitrary: routeBody.map(json).map((b) => ({ method: 'POST', path: '/v1/routes', body: b })) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('PUT', 'PATCH'), segment, routeBody.map(json)).map(([m, id, b]) => ({ method: m, path: `/v1/routes/${id}`, body: b })) },
  { weight: 1, arbitrary: keyBody.map(json).map((b) => ({ method: 'POST', path: '/v1/api-keys', body: b })) },
  { weight: 2, arbitrary: fc.tuple(fc.constantFrom('/v1/traces', '/v1/routes', '/v1/api-keys', '/v1/models'), query).map(([p, q]) => ({ method: 'GET', path: `${p}?${q}`, body: undefined })) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('GET', 'HEAD'), segment, fc.option(query, { nil: undefined })).map(([m, id, q]) => ({ method: m, path: `/v1/traces/${id}${q ? `?${q}` : ''}`, body: undefined })) },
  { weight: 1, arbitrary: fc.tuple(segment, query).map(([id, q]) => ({ method: 'GET', path: `/v1/payloads/${id}?${q}`, body: undefined })) },
  { weight: 3, arbitrary: fc.oneof(responsesBody.map(json), responsesBody.map(json), nonJson, badBytes).map((b) => ({ method: 'POST', path: '/v1/responses', body: b })) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('GET', 'DELETE'), segment, fc.constantFrom('', '/input_items')).map(([m, id, tail]) => ({ method: m, path: `/v1/responses/${id}${tail}`, body: undefined })) },
  { weight: 1, arbitrary: fc.tuple(segment, keyBody.map(json)).map(([id, b]) => ({ method: 'PATCH', path: `/v1/api-keys/${id}`, body: b })) },
  { weight: 1, arbitrary: segment.map((id) => ({ method: 'GET', path: `/v1/api-keys/${id}/usage`, body: undefined })) },
  { weight: 2, arbitrary: query.map((q) => ({ method: 'GET', path: `/v1/usage?${q}`, body: undefined })) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('GET', 'HEAD'), segment).map(([m, p]) => ({ method: m, path: `/ui/${p}`, body: undefined })) },
);

const scattered = fc.record({
  method: fc.constantFrom(...METHODS),
  path: pathAndQuery,
  body: fc.option(body, { nil: undefined, freq: 4 }),
});

export function fuzzRequest(key: string): fc.Arbitrary<FuzzRequest> {
  return fc.record({
    target: fc.oneof({ weight: 3, arbitrary: aimed }, { weight: 2, arbitrary: scattered }),
    auth: fc.oneof({ weight: 3, arbitrary: fc.constant(`Bearer ${key}`) }, { weight: 2, arbitrary: authorization(key) }),
    extra: fc.oneof({ weight: 2, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: extraHeaders }),
  }).map(({ target: { method, path, body: b }, auth, extra }) => {
    const headers: Record<string, string> = { ...extra };
    // node:http sets host itself; a fuzzed one replaces it.
    if (auth !== undefined) headers.authorization = auth;
    if (b !== undefined && !('content-type' in headers)) headers['content-type'] = 'application/json';
    // A GET or HEAD with a body would be sent, but node would frame it oddly; keep bodies on methods that take them.
    const withBody = b !== undefined && !['GET', 'HEAD', 'get'].includes(method);
    // node frames a body on DELETE, OPTIONS or TRACE only with an explicit length; unframed, it would be a second, garbage request.
    if (withBody) headers['content-length'] = String(b.length);
    return { method, path, headers, body: withBody ? b : undefined };
  });
}
