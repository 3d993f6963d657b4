// A config with one OpenAI-compatible upstream (a mock server) and two
// organisations, shared by the end-to-end suites.
import type { ConfigInput } from '../../src/config/schema.js';

export const UPSTREAM_KEY_ENV = 'SLUICE_TEST_UPSTREAM_KEY';

/** A request id: req_, then a UUIDv7 in hex (48 bits of Unix milliseconds, version 7, 12 random bits, the variant 10xx, 62 random bits). */
export const REQUEST_ID = /^req_([0-9a-f]{12})7[0-9a-f]{3}[89ab][0-9a-f]{15}$/;

export function oneUpstreamConfig(upstreamUrl: string, extra: Partial<ConfigInput> = {}): ConfigInput {
  return {
    auth: { cache_ttl_ms: 500, last_used_flush_ms: 200 },
    server: { body_limit_bytes: 64 * 1024 },
    providers: { up: { kind: 'openai', base_url: `${upstreamUrl}/v1`, api_key_env: UPSTREAM_KEY_ENV } },
    models: [
      { id: 'up-model', provider: 'up', aliases: ['up-alias'], context_window: 8_000, pricing: { prompt: 1, completion: 2 } },
      { id: 'up-small', provider: 'up', context_window: 60, pricing: { prompt: 0.1, completion: 0.2 } },
    ],
    organizations: [
      { id: 'acme', models: ['up-model', 'up-small', 'gpt-4o'] },
      { id: 'beta', models: ['mock-echo', 'mock-embed'] },
    ],
    ...extra,
  };
}

/**
 * One mock upstream behind two providers: `up`, chat only (Responses are
 * translated onto it), and `nat`, with a native Responses API.
 */
export function chatAndNativeUpstreams(upstreamUrl: string): Required<Pick<ConfigInput, 'providers' | 'models'>> {
  return {
    providers: {
      up: { kind: 'openai', base_url: `${upstreamUrl}/v1`, api_key_env: UPSTREAM_KEY_ENV },
      nat: { kind: 'openai', base_url: `${upstreamUrl}/v1`, api_key_env: UPSTREAM_KEY_ENV, responses_api: true },
    },
    models: [
      { id: 'up-model', provider: 'up', context_window: 8_000, pricing: { prompt: 1, completion: 2 } },
      { id: 'nat-model', provider: 'nat', aliases: ['nat-alias'], context_window: 8_000, pricing: { prompt: 1, completion: 2 } },
    ],
  };
}

/** Reads an SSE body into its raw events (the text between blank lines). */
export async function readSse(res: Response): Promise<string[]> {
  const text = await res.text();
  return text.split('\n\n').filter(Boolean);
}
