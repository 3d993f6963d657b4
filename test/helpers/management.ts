// Small HTTP helpers for the management-API and routing suites: a JSON call
// with a bearer key, and a routing config where some models are configured
// (a mock OpenAI upstream) and one is not.
import type { ConfigInput } from '../../src/config/schema.js';

export const MGMT_UPSTREAM_ENV = 'SLUICE_TEST_MGMT_UPSTREAM_KEY';
/** Never set: the `offline` provider stays unconfigured. */
export const UNSET_ENV = 'SLUICE_TEST_NEVER_SET_KEY';

export interface Reply {
  status: number;
  body: any;
  text: string;
  headers: Headers;
}

export async function call(base: string, key: string | undefined, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const res = await fetch(base + path, {
    method,
    headers: {
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  let parsed: any;
  try { parsed = text ? JSON.parse(text) : undefined; } catch { parsed = undefined; }
  return { status: res.status, body: parsed, text, headers: res.headers };
}

/** Providers `pa` and `pb` on two mock upstreams, each with its own retry policy. */
/** A model on each of twoProviders' upstreams: a-model on pa, b-model on pb, the dearer. */
export const TWO_MODELS = [
  { id: 'a-model', provider: 'pa', context_window: 8_000, pricing: { prompt: 1, completion: 1 } },
  { id: 'b-model', provider: 'pb', context_window: 8_000, pricing: { prompt: 2, completion: 2 } },
];

export const twoProviders = (a: { url: string }, b: { url: string }, retryA: Record<string, number>, retryB: Record<string, number>) => ({
  pa: { kind: 'openai' as const, base_url: `${a.url}/v1`, api_key_env: MGMT_UPSTREAM_ENV, retry: retryA },
  pb: { kind: 'openai' as const, base_url: `${b.url}/v1`, api_key_env: MGMT_UPSTREAM_ENV, retry: retryB },
});

/** A chat request body for `model`. */
export const chatBody = (model: string, content = 'hello') => ({ model, messages: [{ role: 'user', content }] });

/**
 * Org `acme` activates two configured models on the mock (cheap `up-cheap`, dear
 * `up-dear`), one unconfigured model that is cheapest of all, and `gpt-4o`
 * (built-in provider, unconfigured unless OPENAI_API_KEY is set, never used by
 * the tests). Org `beta` activates only `up-dear`.
 */
export function routingConfig(upstreamUrl: string, extra: Partial<ConfigInput> = {}): ConfigInput {
  return {
    auth: { cache_ttl_ms: 500, last_used_flush_ms: 100 },
    providers: {
      up: { kind: 'openai', base_url: `${upstreamUrl}/v1`, api_key_env: MGMT_UPSTREAM_ENV },
      offline: { kind: 'openai', base_url: 'http://127.0.0.1:9/v1', api_key_env: UNSET_ENV },
    },
    models: [
      { id: 'up-cheap', provider: 'up', aliases: ['cheap'], context_window: 8_000, pricing: { prompt: 0.1, completion: 0.2 } },
      { id: 'up-dear', provider: 'up', aliases: ['dear'], context_window: 8_000, pricing: { prompt: 5, completion: 10 } },
      { id: 'off-model', provider: 'offline', context_window: 8_000, pricing: { prompt: 0.01, completion: 0.01 } },
    ],
    organizations: [
      { id: 'acme', models: ['up-dear', 'up-cheap', 'off-model'] },
      { id: 'beta', models: ['up-dear'] },
    ],
    ...extra,
  };
}
