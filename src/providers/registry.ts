// Wire protocols by provider kind. DeepSeek, Mistral and self-hosted servers
// are `openai` kind with their own base_url: config, not code.
import type { ProviderAdapter, ProviderKind } from '../domain.js';
import { anthropic } from './anthropic/index.js';
import { gemini } from './gemini/index.js';
import { openaiCompatible } from './openai-compatible/index.js';

const adapters = new Map<ProviderKind, ProviderAdapter>([
  ['openai', openaiCompatible],
  ['anthropic', anthropic],
  ['gemini', gemini],
]);

export function adapterFor(kind: ProviderKind): ProviderAdapter | undefined {
  return adapters.get(kind);
}

/** Whether a provider kind has an embeddings API; the in-process mock has one. */
export function hasEmbeddings(kind: ProviderKind): boolean {
  return kind === 'mock' || !!adapters.get(kind)?.embeddingsRequest;
}
