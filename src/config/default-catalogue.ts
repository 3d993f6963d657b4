// The built-in catalogue: public list prices in USD per million tokens and
// context windows as the vendors publish them. A config file may override any
// entry (same provider and id) or add new ones.
import type { ModelEntry } from '../domain.js';

type Row = [id: string, provider: string, contextWindow: number, prompt: number, completion: number, aliases?: string[]];

const chat: Row[] = [
  ['gpt-4o', 'openai', 128_000, 2.5, 10, ['smart']],
  ['gpt-4o-mini', 'openai', 128_000, 0.15, 0.6, ['fast']],
  ['gpt-4.1', 'openai', 1_047_576, 2, 8],
  ['gpt-4.1-mini', 'openai', 1_047_576, 0.4, 1.6],
  ['gpt-4.1-nano', 'openai', 1_047_576, 0.1, 0.4],
  ['o4-mini', 'openai', 200_000, 1.1, 4.4, ['reasoning']],
  ['claude-sonnet-4-20250514', 'anthropic', 200_000, 3, 15, ['claude-sonnet']],
  ['claude-opus-4-20250514', 'anthropic', 200_000, 15, 75, ['claude-opus']],
  ['claude-3-5-haiku-20241022', 'anthropic', 200_000, 0.8, 4, ['claude-haiku']],
  ['gemini-2.5-pro', 'gemini', 1_048_576, 1.25, 10, ['gemini-pro']],
  ['gemini-2.5-flash', 'gemini', 1_048_576, 0.3, 2.5, ['gemini-flash']],
  ['gemini-2.0-flash', 'gemini', 1_048_576, 0.1, 0.4],
  ['deepseek-chat', 'deepseek', 128_000, 0.28, 0.42, ['deepseek']],
  ['deepseek-reasoner', 'deepseek', 128_000, 0.28, 0.42],
  ['mistral-large-latest', 'mistral', 128_000, 2, 6, ['mistral-large']],
  ['mistral-small-latest', 'mistral', 128_000, 0.1, 0.3, ['mistral-small']],
  ['codestral-latest', 'mistral', 256_000, 0.3, 0.9, ['codestral']],
  // DEMO ONLY: the in-process echo model, so that a newcomer without credentials sees the gateway work.
  ['mock-echo', 'mock', 32_768, 1, 2, ['echo']],
];

const embedding: Row[] = [
  ['text-embedding-3-small', 'openai', 8_191, 0.02, 0],
  ['text-embedding-3-large', 'openai', 8_191, 0.13, 0],
  ['text-embedding-ada-002', 'openai', 8_191, 0.1, 0],
  ['gemini-embedding-001', 'google', 2_048, 0.15, 0],
  ['text-embedding-004', 'google', 2_048, 0.025, 0],
  ['mistral-embed', 'mistral', 8_192, 0.1, 0],
  ['mock-embed', 'mock', 8_192, 0.01, 0],
];

const toEntry = (type: ModelEntry['type']) => ([id, provider, context_window, prompt, completion, aliases = []]: Row): ModelEntry =>
  ({ id, provider, type, aliases, context_window, pricing: { prompt, completion } });

export const DEFAULT_MODELS: readonly ModelEntry[] = [...chat.map(toEntry('chat')), ...embedding.map(toEntry('embedding'))];

/** Built-in providers. `google` serves the embeddings catalogue and shares Gemini's credential. */
export const DEFAULT_PROVIDERS = {
  openai: { kind: 'openai', base_url: 'https://api.openai.com/v1', api_key_env: 'OPENAI_API_KEY', responses_api: true },
  deepseek: { kind: 'openai', base_url: 'https://api.deepseek.com/v1', api_key_env: 'DEEPSEEK_API_KEY' },
  mistral: { kind: 'openai', base_url: 'https://api.mistral.ai/v1', api_key_env: 'MISTRAL_API_KEY' },
  anthropic: { kind: 'anthropic', base_url: 'https://api.anthropic.com/v1', api_key_env: 'ANTHROPIC_API_KEY' },
  gemini: { kind: 'gemini', base_url: 'https://generativelanguage.googleapis.com/v1beta', api_key_env: 'GEMINI_API_KEY' },
  google: { kind: 'gemini', base_url: 'https://generativelanguage.googleapis.com/v1beta', api_key_env: 'GEMINI_API_KEY' },
  mock: { kind: 'mock' },
} as const;
