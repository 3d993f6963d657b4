// OpenAI's own Responses API, for providers configured with responses_api:
// the caller's body goes to POST {base}/responses with only the model (and the
// DLP'd input) replaced, and its typed SSE events come back as they were sent.
import type { ProviderAdapter, StreamEvent, StreamTranslator, UpstreamErrorDetails, UpstreamRequest, UpstreamTarget } from '../../domain.js';
import { inBandError } from '../in-band-error.js';
import { joinUrl } from '../url.js';
import { withMembers } from '../json-members.js';
import { isObj } from '../json-shape.js';
import { openaiCompatible } from './index.js';

/**
 * A native Responses body: `value` is the whole object, `members` the part of
 * it that differs from what the caller sent. With the caller's `text`, the
 * body is that text with `members` (and the model) spliced in, so every other
 * member reaches the upstream byte for byte, number spellings included.
 */
export interface NativeBody {
  value: Record<string, unknown>;
  members: Record<string, unknown>;
  text: string | undefined;
}

export function responsesRequest(target: UpstreamTarget, body: NativeBody, stream: boolean): UpstreamRequest {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (target.apiKey) headers.authorization = `Bearer ${target.apiKey}`;
  const members: Record<string, unknown> = { ...body.members, model: target.model };
  if (stream) members.stream = true;
  const spliced = body.text === undefined ? undefined : withMembers(body.text, members);
  return { url: joinUrl(target.baseUrl, 'responses'), method: 'POST', headers, body: spliced ?? JSON.stringify({ ...body.value, ...members }) };
}

/**
 * DELETE {base}/responses/{id}, with the credential a create sends. The id is
 * appended, not resolved as a URL: an id is the upstream's own, one per
 * response, which joinUrl's cache is not for.
 */
export function responsesDeleteRequest(target: UpstreamTarget, id: string): UpstreamRequest {
  const headers: Record<string, string> = {};
  if (target.apiKey) headers.authorization = `Bearer ${target.apiKey}`;
  const base = joinUrl(target.baseUrl, 'responses');
  const tail = `/${encodeURIComponent(id)}`;
  return { url: { origin: base.origin, path: base.path + tail, href: base.href + tail }, method: 'DELETE', headers, body: '' };
}

/** A Responses `error` event carries its members at the top: `{type: "error", code, message, param}`; its `type` is the event's. */
function errorEventDetails(e: Record<string, unknown>): UpstreamErrorDetails {
  const str = (v: unknown) => (typeof v === 'string' && v ? v : null);
  return { message: str(e.message) ?? 'The upstream stream failed.', param: str(e.param), code: str(e.code) };
}

const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed']);

/** Each event parsed once and handed on with its own text; a terminal event (or `error`) ends the stream. */
function responsesStreamTranslator(): StreamTranslator {
  return {
    event(name, data): StreamEvent[] {
      let parsed: unknown;
      try { parsed = JSON.parse(data); } catch { return [{ type: 'error', message: 'The upstream sent a malformed stream event.' }]; }
      if (!isObj(parsed) || Array.isArray(parsed)) return [{ type: 'error', message: 'The upstream sent a malformed stream event.' }];
      const type = typeof parsed.type === 'string' ? parsed.type : name ?? '';
      // An event sent over several `data:` lines arrives joined by line breaks; its text, relayed as
      // written, would end the client's data line early, so it is written from the parse instead.
      const ev: StreamEvent = { type: 'event', name: type, data: parsed, raw: data.includes('\n') ? undefined : data };
      if (type === 'error') ev.upstream = inBandError(parsed, () => errorEventDetails(parsed));
      return TERMINAL.has(type) || type === 'error' ? [ev, { type: 'done' }] : [ev];
    },
  };
}

/** The OpenAI-compatible adapter with the Responses stream translator: errors and rate-limit headers read the same. */
export const openaiResponses: ProviderAdapter = { ...openaiCompatible, streamTranslator: responsesStreamTranslator };
