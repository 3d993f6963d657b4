// For the provider adapter tests: build the ChatRequest the gateway would have
// parsed, send the adapter's UpstreamRequest to a mock with undici, and read the
// answer whole or as SSE fed through the adapter's own stream translator.
import assert from 'node:assert/strict';
import { request } from 'undici';
import { createParser } from 'eventsource-parser';
import type { ChatMessage, ChatRequest, ProviderAdapter, StreamEvent, UpstreamRequest } from '../../src/domain.js';

/** A builder of chat requests for `model`; `fields` also land in `raw`, as they would from a parsed body. */
export function chatFor(model: string): (messages: ChatMessage[], fields?: Partial<ChatRequest>) => ChatRequest {
  return (messages, fields = {}) => {
    const { raw, ...rest } = fields;
    return { model, messages, stream: false, n: 1, ...rest, raw: { model, messages, ...rest, ...raw } };
  };
}

export async function send(up: UpstreamRequest): Promise<{ status: number; text: string }> {
  const res = await request(up.url, { method: up.method, headers: up.headers, body: up.body });
  return { status: res.statusCode, text: await res.body.text() };
}

/** Feeds the SSE body through the adapter's translator; a dropped connection comes back as `cut`. */
export async function streamThrough(adapter: ProviderAdapter, up: UpstreamRequest): Promise<{ events: StreamEvent[]; cut?: unknown }> {
  const translator = adapter.streamTranslator();
  const events: StreamEvent[] = [];
  const parser = createParser({ onEvent: (e) => { events.push(...translator.event(e.event, e.data)); } });
  const res = await request(up.url, { method: up.method, headers: up.headers, body: up.body });
  assert.equal(res.statusCode, 200);
  const decoder = new TextDecoder();
  try { for await (const chunk of res.body) parser.feed(decoder.decode(chunk, { stream: true })); } catch (cut) { return { events, cut }; }
  // The body ended, as the gateway's exchange tells the translator.
  if (translator.end) events.push(...translator.end());
  return { events };
}

/** The content of every chunk's first choice, joined. */
export const deltaText = (events: StreamEvent[]) =>
  events.map((e) => (e.type === 'chunk' ? e.chunk.choices.map((c) => (c.index === 0 && typeof c.delta?.content === 'string' ? c.delta.content : '')).join('') : '')).join('');
