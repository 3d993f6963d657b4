// The dispatch stage: one call per request to the resolved provider, through
// its adapter, or in-process for the demo mock provider.
import type { ChatRequest, ChatResult, EmbeddingsRequest, EmbeddingsResult, ProviderAdapter, StreamEvent, UpstreamTarget } from '../domain.js';
import { GatewayError } from '../errors.js';
import { mockChat, mockEmbeddings, mockStream } from '../providers/mock/index.js';
import { adapterFor } from '../providers/registry.js';
import { requestJson, requestStream } from './exchange.js';
import type { UpstreamPools } from './pools.js';
import type { ClientSignal } from '../http/client-signal.js';

export interface ChatOutcome {
  result: ChatResult;
  /** The body as sent upstream (after redaction), for the payload archive. */
  sent: string;
}

/** A whole answer as one batch of events. */
export async function* oneBatch(events: StreamEvent[]): AsyncGenerator<StreamEvent[]> {
  yield events;
}

export class Upstream {
  constructor(private readonly pools: UpstreamPools) {}

  private adapter(target: UpstreamTarget): ProviderAdapter {
    const a = adapterFor(target.kind);
    if (!a) throw new GatewayError('gateway_error', `No adapter for provider kind "${target.kind}".`);
    return a;
  }

  async chat(target: UpstreamTarget, req: ChatRequest, signal: ClientSignal): Promise<ChatOutcome> {
    if (target.kind === 'mock') return { result: mockChat(req), sent: JSON.stringify({ model: target.model, messages: req.messages }) };
    const adapter = this.adapter(target);
    const up = adapter.chatRequest(target, req);
    return { result: adapter.chatResponse(await requestJson(this.pools, adapter, up, signal)), sent: up.body };
  }

  /** Resolves once the upstream accepted the call; an error status rejects before any byte reaches the caller. */
  async chatStream(target: UpstreamTarget, req: ChatRequest, signal: ClientSignal): Promise<{ events: AsyncIterable<StreamEvent[]>; sent: string }> {
    if (target.kind === 'mock') return { events: oneBatch(mockStream(req)), sent: JSON.stringify({ model: target.model, messages: req.messages, stream: true }) };
    const adapter = this.adapter(target);
    const up = adapter.chatRequest(target, req);
    return { events: await requestStream(this.pools, adapter, up, signal), sent: up.body };
  }

  async embeddings(target: UpstreamTarget, req: EmbeddingsRequest, signal: ClientSignal): Promise<{ result: EmbeddingsResult; sent: string }> {
    if (target.kind === 'mock') return { result: mockEmbeddings(req), sent: JSON.stringify({ model: target.model, input: req.input }) };
    const adapter = this.adapter(target);
    if (!adapter.embeddingsRequest || !adapter.embeddingsResponse) {
      throw new GatewayError('embeddings_unsupported', `The ${target.provider} provider has no embeddings API.`, { param: 'model' });
    }
    const up = adapter.embeddingsRequest(target, req);
    return { result: adapter.embeddingsResponse(await requestJson(this.pools, adapter, up, signal)), sent: up.body };
  }
}
