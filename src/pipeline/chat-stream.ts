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
import { oneBatch } from '../upstream/upstream.js';
import { gatewayBlock } from './gateway-block.js';
import type { RequestContext } from './request-context.js';
import type { Services } from './services.js';

const SSE_HEADERS: HeaderList = [
  ['content-type', 'text/event-stream; charset=utf-8'],
  ['cache-control', 'no-cache'],
  // Reverse proxies such as nginx would otherwise buffer the stream and destroy TTFB.
  ['x-accel-buffering', 'no'],
];

async function collect(batches: AsyncIterable<StreamEvent[]>): Promise<StreamEvent[]> {
  const all: StreamEvent[] = [];
  for await (const batch of batches) {
    for (const ev of batch) {
      if (ev.type === 'error') throw new GatewayError('upstream_error', ev.message);
      all.push(ev);
    }
  }
  return all;
}

export async function streamChat(
  svc: Services, ctx: RequestContext, res: GatewayResponse, target: UpstreamTarget,
  chat: ChatRequest, route: Resolution, wantBlock: boolean,
): Promise<void> {
  const org = ctx.key!.organization_id;
  const upstream = await svc.upstream.chatStream(target, chat, res.signal);
  let batches: AsyncIterable<StreamEvent[]> = upstream.events;
  const mode = svc.policy?.outputMode(org) ?? 'off';
  if (mode === 'buffered') {
    // The spec: the stream starts after moderation, not token by token.
    const all = await collect(batches);
    let text = '';
    for (const ev of all) if (ev.type === 'delta' && ev.content) text += ev.content;
    const verdict = await svc.policy!.moderate(org, text);
    if (verdict.blocked) throw new GatewayError('content_blocked', `The output was blocked by moderation (${verdict.category}).`);
    batches = oneBatch(all);
  }
  const moderator = mode === 'chunked' ? svc.policy!.chunked(org) : undefined;
  const out = new StreamOut(res, ctx, new ChunkWriter(`chatcmpl_${ctx.requestId.slice(4)}`, route.entry.id, Math.floor(ctx.startedEpoch / 1000)));

  let usage: Usage | undefined;
  let text = '';
  for await (const batch of batches) {
    for (const ev of batch) {
      if (ev.type === 'usage') { usage = ev.usage; continue; }
      if (ev.type === 'error') {
        if (!res.started && !out.pending) throw new GatewayError('upstream_error', ev.message);
        return out.abort('upstream_error', ev.message);
      }
      if (ev.type !== 'delta') continue;
      let content = ev.content;
      if (moderator) {
        const cleared = clear(moderator, content, ev.finish_reason !== undefined);
        if (cleared.blocked) {
          const message = `The output was blocked by moderation (${cleared.category}).`;
          // No cleared output yet, sent or pending: the stream has not begun, so this is still a JSON error.
          if (!res.started && !out.hasOutput) throw new GatewayError('content_blocked', message);
          return out.abort('content_blocked', message);
        }
        content = cleared.release || undefined;
      }
      if (content !== undefined) text += content;
      if (content === undefined && ev.role === undefined && ev.finish_reason === undefined) continue;
      out.add(out.writer.delta(ev.role, content, ev.finish_reason), content);
    }
    // Under chunked moderation the stream commits to 200 only with the first cleared output,
    // so a block before any is still a plain JSON error.
    if (!moderator || out.hasOutput) await out.flush();
    if (res.aborted) return out.clientLeft();
  }
  if (res.aborted) return out.clientLeft();
  const finalUsage = usage ?? estimatedUsage(chat, text);
  recordUsage(ctx, route, finalUsage);
  ctx.trace.status_code = 200;
  if (svc.config.organizations.get(org)?.store_payloads) {
    ctx.trace.payload = { request: JSON.parse(upstream.sent), response: { content: text, usage: finalUsage } };
  }
  out.add(out.writer.tail(finalUsage), undefined);
  if (wantBlock) out.add(out.writer.tail(finalUsage, gatewayBlock(ctx)), undefined);
  out.end(DONE);
}

/** Feeds the chunked moderator; at the finish chunk, also releases the window it held back. */
function clear(m: ChunkedModerator, content: string | undefined, last: boolean) {
  let step = content ? m.push(content) : { blocked: false as const, release: '' };
  if (step.blocked || !last) return step;
  const rest = m.finish();
  if (rest.blocked) return rest;
  return { blocked: false as const, release: step.release + rest.release };
}

/**
 * Collects the lines of one upstream read and writes them at once, with
 * backpressure, keeping the trace's stream fields exact.
 */
class StreamOut {
  /** Lines not yet written. */
  pending = '';
  /** UTF-8 bytes of model output sent (or going out with `pending`); the trace keeps it only for a stream cut short. */
  private disclosed = 0;

  constructor(private readonly res: GatewayResponse, private readonly ctx: RequestContext, readonly writer: ChunkWriter) {}

  get hasOutput(): boolean { return this.disclosed > 0; }

  add(line: string, content: string | undefined): void {
    this.pending += line;
    if (content) this.disclosed += Buffer.byteLength(content);
  }

  private begin(): void {
    if (this.res.started) return;
    this.res.beginStream(200, [...SSE_HEADERS, ['x-request-id', this.ctx.requestId]]);
    this.ctx.trace.status_code = 200;
    this.ctx.trace.ttfb_ms = Math.round(this.ctx.elapsedMs() * 1000) / 1000;
  }

  async flush(): Promise<void> {
    if (!this.pending) return;
    this.begin();
    const wait = this.res.write(this.pending);
    this.pending = '';
    if (wait) await wait;
  }

  end(last: string): void {
    this.begin();
    this.res.endStream(this.pending + last);
    this.pending = '';
  }

  abort(code: 'upstream_error' | 'content_blocked', message: string): void {
    this.ctx.trace.stream_aborted = true;
    this.ctx.trace.error_code = code;
    this.ctx.trace.disclosed_bytes = this.disclosed;
    this.end(sseErrorEvent(code, message, this.ctx.requestId));
  }

  clientLeft(): void {
    this.ctx.trace.stream_aborted = true;
    this.ctx.trace.error_code = 'client_closed';
    this.ctx.trace.disclosed_bytes = this.disclosed;
  }
}
