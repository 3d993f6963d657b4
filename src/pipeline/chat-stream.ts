// The streaming path. Deltas are forwarded as they arrive; status and headers
// go out with the first one, so a failure before it is still a JSON error.
// Buffered moderation collects the whole output first and replays it; chunked
// moderation releases only what the moderator has cleared.
import type { ChatRequest, StreamEvent, Usage, UpstreamTarget } from '../domain.js';
import { GatewayError, sseErrorEvent } from '../errors.js';
import type { GatewayResponse, HeaderList } from '../http/types.js';
import type { ChunkedModerator } from '../policy/types.js';
import type { Resolution } from '../routing/resolve-chat.js';
import { ChunkWriter, DONE } from './chat-chunks.js';
import { estimatedUsage, recordUsage } from './chat-completions.js';
import { gatewayBlock } from './gateway-block.js';
import type { RequestContext } from './request-context.js';
import type { Services } from './services.js';

const SSE_HEADERS: HeaderList = [
  ['content-type', 'text/event-stream; charset=utf-8'],
  ['cache-control', 'no-cache'],
  // Reverse proxies such as nginx would otherwise buffer the stream and destroy TTFB.
  ['x-accel-buffering', 'no'],
];

async function collect(events: AsyncGenerator<StreamEvent>): Promise<StreamEvent[]> {
  const all: StreamEvent[] = [];
  for await (const ev of events) {
    if (ev.type === 'error') throw new GatewayError('upstream_error', ev.message);
    all.push(ev);
  }
  return all;
}

async function* replay(events: StreamEvent[]): AsyncGenerator<StreamEvent> {
  yield* events;
}

export async function streamChat(
  svc: Services, ctx: RequestContext, res: GatewayResponse, target: UpstreamTarget,
  chat: ChatRequest, route: Resolution, wantBlock: boolean,
): Promise<void> {
  const org = ctx.key!.organization_id;
  const upstream = await svc.upstream.chatStream(target, chat, res.signal);
  let events = upstream.events;
  const mode = svc.policy?.outputMode(org) ?? 'off';
  if (mode === 'buffered') {
    // The spec: the stream starts after moderation, not token by token.
    const all = await collect(events);
    let text = '';
    for (const ev of all) if (ev.type === 'delta' && ev.content) text += ev.content;
    const verdict = await svc.policy!.moderate(org, text);
    if (verdict.blocked) throw new GatewayError('content_blocked', `The output was blocked by moderation (${verdict.category}).`);
    events = replay(all);
  }
  const moderator = mode === 'chunked' ? svc.policy!.chunked(org) : undefined;
  const out = new StreamOut(res, ctx, new ChunkWriter(`chatcmpl_${ctx.requestId.slice(4)}`, route.entry.id, Math.floor(ctx.startedEpoch / 1000)));

  let usage: Usage | undefined;
  let text = '';
  for await (const ev of events) {
    if (ev.type === 'usage') { usage = ev.usage; continue; }
    if (ev.type === 'error') {
      if (!res.started) throw new GatewayError('upstream_error', ev.message);
      return out.abort('upstream_error', ev.message);
    }
    if (ev.type !== 'delta') continue;
    let content = ev.content;
    if (moderator) {
      const cleared = clear(moderator, content, ev.finish_reason !== undefined);
      if (cleared.blocked) return out.abort('content_blocked', `The output was blocked by moderation (${cleared.category}).`);
      content = cleared.release || undefined;
    }
    if (content !== undefined) text += content;
    if (content === undefined && ev.role === undefined && ev.finish_reason === undefined) continue;
    await out.send(out.writer.delta(ev.role, content, ev.finish_reason), content);
    if (res.aborted) return out.clientLeft();
  }
  if (res.aborted) return out.clientLeft();
  const finalUsage = usage ?? estimatedUsage(chat, text);
  recordUsage(ctx, route, finalUsage);
  ctx.trace.status_code = 200;
  if (svc.config.organizations.get(org)?.store_payloads) {
    ctx.trace.payload = { request: JSON.parse(upstream.sent), response: { content: text, usage: finalUsage } };
  }
  await out.send(out.writer.tail(finalUsage), undefined);
  const tail = wantBlock ? out.writer.tail(finalUsage, gatewayBlock(ctx)) : '';
  res.endStream(tail + DONE);
}

/** Feeds the chunked moderator; at the finish chunk, also releases the window it held back. */
function clear(m: ChunkedModerator, content: string | undefined, last: boolean) {
  let step = content ? m.push(content) : { blocked: false as const, release: '' };
  if (step.blocked || !last) return step;
  const rest = m.finish();
  if (rest.blocked) return rest;
  return { blocked: false as const, release: step.release + rest.release };
}

/** Writes with backpressure and keeps the trace's stream fields exact. */
class StreamOut {
  /** UTF-8 bytes of model output written so far; the trace keeps it only for a stream cut short. */
  private disclosed = 0;

  constructor(private readonly res: GatewayResponse, private readonly ctx: RequestContext, readonly writer: ChunkWriter) {}

  async send(line: string, content: string | undefined): Promise<void> {
    if (!this.res.started) {
      this.res.beginStream(200, [...SSE_HEADERS, ['x-request-id', this.ctx.requestId]]);
      this.ctx.trace.status_code = 200;
      this.ctx.trace.ttfb_ms = Math.round(this.ctx.elapsedMs() * 1000) / 1000;
    }
    const wait = this.res.write(line);
    if (content) this.disclosed += Buffer.byteLength(content);
    if (wait) await wait;
  }

  abort(code: 'upstream_error' | 'content_blocked', message: string): void {
    this.ctx.trace.stream_aborted = true;
    this.ctx.trace.error_code = code;
    this.ctx.trace.disclosed_bytes = this.disclosed;
    this.res.endStream(sseErrorEvent(code, message, this.ctx.requestId));
  }

  clientLeft(): void {
    this.ctx.trace.stream_aborted = true;
    this.ctx.trace.error_code = 'client_closed';
    this.ctx.trace.disclosed_bytes = this.disclosed;
  }
}
