// The dispatch stage: one call per request to the resolved provider, through
// its adapter, or in-process for the demo mock provider.
import type { ChatCompletion, ChatRequest, EmbeddingsRequest, EmbeddingsResult, PassHeaders, ProviderAdapter, UpstreamTarget } from '../domain.js';
import { answerFault, GatewayError } from '../errors.js';
import { mockChat, mockEmbeddings, mockStream } from '../providers/mock/index.js';
import { adapterFor } from '../providers/registry.js';
import { openaiResponses, responsesDeleteRequest, responsesRequest, type NativeBody } from '../providers/openai-compatible/responses.js';
import { requestJson, requestStream } from './exchange.js';
import { oneBatch, type StreamOutcome } from './stream-batches.js';
import type { UpstreamPools } from './pools.js';
import type { ClientSignal } from '../http/client-signal.js';

export interface ChatOutcome {
  completion: ChatCompletion;
  /** The body as sent upstream (after redaction), for the payload archive. */
  sent: string;
  /** The upstream's rate-limit headers, for the caller. */
  headers: PassHeaders;
  /** The upstream's own text of `completion`, when `completion` is that text parsed and nothing else. */
  text?: string;
}

export class Upstream {
  constructor(private readonly pools: UpstreamPools) {}

  private adapter(target: UpstreamTarget): ProviderAdapter {
    const a = adapterFor(target.kind);
    if (!a) throw new GatewayError('gateway_error', `No adapter for provider kind "${target.kind}".`);
    return a;
  }

  /**
   * `keepSent`: whether the outcome carries the body sent (for the payload
   * archive). These JSON calls are not async functions: a suspended async
   * frame keeps its registers, `up` among them, for as long as the call
   * waits, which was a copy of the whole prompt more per waiting call. Here
   * `up` dies when the call has been dispatched (a retry builds it again).
   * A throw before the dispatch still reaches the caller's await.
   */
  chat(target: UpstreamTarget, req: ChatRequest, signal: ClientSignal, keepSent: boolean): Promise<ChatOutcome> {
    if (target.kind === 'mock') return Promise.resolve({ completion: mockChat(req), sent: JSON.stringify({ model: target.model, messages: req.messages }), headers: [] });
    const adapter = this.adapter(target);
    const up = adapter.chatRequest(target, req);
    const sent = keepSent ? up.body : '';
    return requestJson(this.pools, adapter, up, signal).then((answer) => {
      let completion;
      try { completion = adapter.chatResponse(answer.body); } catch (err) { throw answerFault(err); }
      const outcome: ChatOutcome = { completion, sent, headers: answer.headers };
      // An adapter that returns the parsed body itself (OpenAI-compatible) lets the reply be made from its text.
      if (outcome.completion === answer.body) outcome.text = answer.text;
      return outcome;
    });
  }

  /**
   * Resolves with the upstream's first event; an error status, or a body that
   * fails before it or with an error event, rejects (exchange.ts). `keepSent` as for chat(): an accepted
   * stream may run for minutes, and the body sent is a copy of its prompt.
   */
  chatStream(target: UpstreamTarget, req: ChatRequest, signal: ClientSignal, keepSent: boolean): Promise<StreamOutcome> {
    if (target.kind === 'mock') {
      return Promise.resolve({ events: oneBatch(mockStream(req)), sent: keepSent ? JSON.stringify({ model: target.model, messages: req.messages, stream: true }) : '', headers: [] });
    }
    const adapter = this.adapter(target);
    const up = adapter.chatRequest(target, req);
    const sent = keepSent ? up.body : '';
    return requestStream(this.pools, adapter, up, signal, sent, req.n);
  }

  /** A native Responses API call (providers with responses_api): the upstream's response object as parsed, and its text; not async, as chat() is not. */
  responses(target: UpstreamTarget, body: NativeBody, signal: ClientSignal, keepSent: boolean): Promise<{ body: unknown; text: string; sent: string; headers: PassHeaders }> {
    const up = responsesRequest(target, body, false);
    const sent = keepSent ? up.body : '';
    return requestJson(this.pools, openaiResponses, up, signal).then((answer) => ({ body: answer.body, text: answer.text, sent, headers: answer.headers }));
  }

  /** A native Responses API stream: `event` StreamEvents, as the upstream sent them; `keepSent` as for chat(). */
  responsesStream(target: UpstreamTarget, body: NativeBody, signal: ClientSignal, keepSent: boolean): Promise<StreamOutcome> {
    const up = responsesRequest(target, body, true);
    const sent = keepSent ? up.body : '';
    return requestStream(this.pools, openaiResponses, up, signal, sent);
  }

  /**
   * Deletes a response the upstream stores (native path). Any 2xx is done,
   * whatever its body says; an error status rejects as any call's does (a 404
   * as upstream_error with upstreamStatus 404).
   */
  deleteResponse(target: UpstreamTarget, id: string, signal: ClientSignal): Promise<void> {
    return requestJson(this.pools, openaiResponses, responsesDeleteRequest(target, id), signal, () => undefined).then(() => undefined);
  }

  /** Not async, as chat() is not. */
  embeddings(target: UpstreamTarget, req: EmbeddingsRequest, signal: ClientSignal, keepSent: boolean): Promise<{ result: EmbeddingsResult; sent: string; headers: PassHeaders }> {
    if (target.kind === 'mock') return Promise.resolve({ result: mockEmbeddings(req), sent: JSON.stringify({ model: target.model, input: req.input }), headers: [] });
    const adapter = this.adapter(target);
    if (!adapter.embeddingsRequest || !adapter.embeddingsResponse) {
      throw new GatewayError('embeddings_unsupported', `The ${target.provider} provider has no embeddings API.`, { param: 'model' });
    }
    const up = adapter.embeddingsRequest(target, req);
    const sent = keepSent ? up.body : '';
    // An adapter that reads the answer off its text (embeddingsText) returns the result from the parse itself.
    return requestJson(this.pools, adapter, up, signal, adapter.embeddingsText).then(({ body, headers }) => ({
      result: adapter.embeddingsText ? body as EmbeddingsResult : adapter.embeddingsResponse!(body), sent, headers,
    }));
  }
}
