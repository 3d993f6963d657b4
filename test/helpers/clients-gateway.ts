// One gateway in front of all three wire protocols (an OpenAI-compatible
// mock, the Anthropic mock, the Gemini mock), for suites that drive it with
// real client libraries. Every mock speaks the shared tool mode: offered tools
// it calls the forced or first one with {"location":"Paris"}, and it answers a
// tool result with `Tool said: <result>`.
import { startAnthropicMock, ANTHROPIC_MOCK_KEY } from '../mocks/anthropic-mock.js';
import { startGeminiMock, GEMINI_MOCK_KEY } from '../mocks/gemini-mock.js';
import type { MockUpstream } from '../mocks/mock-server.js';
import { startOpenAIMock, OPENAI_MOCK_KEY } from '../mocks/openai-mock.js';
import type { HttpChoice } from '../../src/http/create-server.js';
import { startGateway, type TestGateway } from './gateway.js';

export interface Protocol {
  label: 'openai' | 'anthropic' | 'gemini';
  /** The model the caller names; the catalogue routes it to this protocol's mock. */
  model: string;
  mock: MockUpstream;
}

export interface ClientsGateway {
  gw: TestGateway;
  baseURL: string;
  key: string;
  protocols: Protocol[];
  close(): Promise<void>;
}

export async function startClientsGateway(http: HttpChoice): Promise<ClientsGateway> {
  const [openai, anthropic, gemini] = await Promise.all([startOpenAIMock(), startAnthropicMock(), startGeminiMock()]);
  const gw = await startGateway({
    http,
    env: { SLUICE_T_OPENAI: OPENAI_MOCK_KEY, SLUICE_T_ANTHROPIC: ANTHROPIC_MOCK_KEY, SLUICE_T_GEMINI: GEMINI_MOCK_KEY },
    config: {
      providers: {
        up: { kind: 'openai', base_url: `${openai.url}/v1`, api_key_env: 'SLUICE_T_OPENAI' },
        anthropic: { kind: 'anthropic', base_url: `${anthropic.url}/v1`, api_key_env: 'SLUICE_T_ANTHROPIC' },
        gemini: { kind: 'gemini', base_url: `${gemini.url}/v1beta`, api_key_env: 'SLUICE_T_GEMINI' },
      },
      models: [{ id: 'up-model', provider: 'up', context_window: 128_000, pricing: { prompt: 1, completion: 2 } }],
      organizations: [{ id: 'acme', models: ['up-model', 'claude-sonnet-4-20250514', 'gemini-2.5-flash'] }],
    },
  });
  const key = await gw.key('acme');
  return {
    gw,
    baseURL: `${gw.url}/v1`,
    key,
    protocols: [
      { label: 'openai', model: 'up-model', mock: openai },
      { label: 'anthropic', model: 'claude-sonnet-4-20250514', mock: anthropic },
      { label: 'gemini', model: 'gemini-2.5-flash', mock: gemini },
    ],
    async close() {
      await gw.close();
      await Promise.all([openai.close(), anthropic.close(), gemini.close()]);
    },
  };
}

/** What the mocks answer, and what the structured-output prompts ask them to echo. */
export const PARIS = { location: 'Paris' };
export const TOOL_RESULT = '{"temperature":18}';
export const WEATHER_OBJECT = { city: 'Paris', temperature_c: 1.5 };
