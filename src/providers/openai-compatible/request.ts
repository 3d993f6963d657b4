// OpenAI-compatible upstreams take the caller's body almost as sent: the model is
// replaced, and streams ask for usage so that the final chunk can always carry it.
// Where the caller's text may go as written (ChatRequest.rawText), that is its own
// text with those values spliced in, which also keeps every member byte for byte.
import type { ChatRequest, EmbeddingsRequest, UpstreamRequest, UpstreamTarget } from '../../domain.js';
import { withMembers } from '../json-members.js';
import { joinUrl } from '../url.js';

function headers(target: UpstreamTarget): Record<string, string> {
  const h: Record<string, string> = { 'content-type': 'application/json' };
  if (target.apiKey) h.authorization = `Bearer ${target.apiKey}`;
  return h;
}

export function chatRequest(target: UpstreamTarget, req: ChatRequest): UpstreamRequest {
  const url = joinUrl(target.baseUrl, 'chat/completions');
  const spliced = req.rawText === undefined ? undefined : splicedChatBody(target, req, req.rawText);
  if (spliced !== undefined) return { url, method: 'POST', headers: headers(target), body: spliced };
  // Rest destructuring rather than `delete`, which would drop the object into V8's slow dictionary mode.
  const { stream: _stream, stream_options: streamOptions, ...rest } = req.raw;
  const body: Record<string, unknown> = { ...rest, model: target.model, messages: req.messages };
  if (req.stream) {
    body.stream = true;
    body.stream_options = withUsage(streamOptions);
  }
  return { url, method: 'POST', headers: headers(target), body: JSON.stringify(body) };
}

function withUsage(streamOptions: unknown): Record<string, unknown> {
  return { ...(streamOptions as object | undefined), include_usage: true };
}

/**
 * The same body as above, made from the caller's text: every member as the
 * caller wrote it, the model replaced and, for a stream, usage asked for.
 * Undefined (re-serialise instead) where the text cannot be spliced safely, or
 * where the body above drops a member: `stream_options` without a stream.
 */
function splicedChatBody(target: UpstreamTarget, req: ChatRequest, text: string): string | undefined {
  const members: Record<string, unknown> = { model: target.model };
  const options = req.raw.stream_options as { include_usage?: unknown } | undefined;
  if (!req.stream) {
    if (options !== undefined) return undefined;
  } else if (options?.include_usage !== true) {
    members.stream_options = withUsage(options);
  }
  return withMembers(text, members);
}

/** The embeddings members the gateway reads and writes itself; the caller's others go as sent. */
const EMBEDDINGS_OWN = new Set(['model', 'input', 'encoding_format', 'dimensions', 'user']);

/** Always float from the upstream: the gateway encodes base64 itself so both encodings carry identical values. */
export function embeddingsRequest(target: UpstreamTarget, req: EmbeddingsRequest): UpstreamRequest {
  // No prototype: a caller's "__proto__" member is a member like any other, and goes as sent.
  const body: Record<string, unknown> = Object.create(null);
  for (const key in req.raw) if (!EMBEDDINGS_OWN.has(key)) body[key] = req.raw[key];
  body.model = target.model;
  // The input after DLP.
  body.input = req.input;
  body.encoding_format = 'float';
  if (req.dimensions !== undefined) body.dimensions = req.dimensions;
  if (req.user !== undefined) body.user = req.user;
  return { url: joinUrl(target.baseUrl, 'embeddings'), method: 'POST', headers: headers(target), body: JSON.stringify(body) };
}
