// OpenAI-compatible upstreams take the caller's body almost as sent: the model is
// replaced, and streams ask for usage so that the final chunk can always carry it.
import type { ChatRequest, EmbeddingsRequest, UpstreamRequest, UpstreamTarget } from '../../domain.js';
import { joinUrl } from '../url.js';

function headers(target: UpstreamTarget): Record<string, string> {
  const h: Record<string, string> = { 'content-type': 'application/json' };
  if (target.apiKey) h.authorization = `Bearer ${target.apiKey}`;
  return h;
}

export function chatRequest(target: UpstreamTarget, req: ChatRequest): UpstreamRequest {
  // Rest destructuring rather than `delete`, which would drop the object into V8's slow dictionary mode.
  const { stream: _stream, stream_options: streamOptions, ...rest } = req.raw;
  const body: Record<string, unknown> = { ...rest, model: target.model, messages: req.messages };
  if (req.stream) {
    body.stream = true;
    body.stream_options = { ...(streamOptions as object | undefined), include_usage: true };
  }
  return { url: joinUrl(target.baseUrl, 'chat/completions'), method: 'POST', headers: headers(target), body: JSON.stringify(body) };
}

/** Always float from the upstream: the gateway encodes base64 itself so both encodings carry identical values. */
export function embeddingsRequest(target: UpstreamTarget, req: EmbeddingsRequest): UpstreamRequest {
  const body: Record<string, unknown> = { model: target.model, input: req.input, encoding_format: 'float' };
  if (req.dimensions !== undefined) body.dimensions = req.dimensions;
  if (req.user !== undefined) body.user = req.user;
  return { url: joinUrl(target.baseUrl, 'embeddings'), method: 'POST', headers: headers(target), body: JSON.stringify(body) };
}
