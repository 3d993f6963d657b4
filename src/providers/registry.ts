// Wire protocols by provider kind. DeepSeek, Mistral and self-hosted servers
// are `openai` kind with their own base_url: config, not code.
import type { ProviderAdapter, ProviderKind } from '../domain.js';
import { openaiCompatible } from './openai-compatible/index.js';

const adapters = new Map<ProviderKind, ProviderAdapter>([['openai', openaiCompatible]]);

export function registerAdapter(adapter: ProviderAdapter): void {
  adapters.set(adapter.kind, adapter);
}

export function adapterFor(kind: ProviderKind): ProviderAdapter | undefined {
  return adapters.get(kind);
}
