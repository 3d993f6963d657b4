// The streaming path. Chunks are forwarded as they arrive; status and headers
// go out with the first one, so a failure before it is still a JSON error.
// Buffered moderation collects the whole output first and replays it; chunked
// moderation releases only what its windows have cleared.
import type { ChatChunk, ChatRequest } from '../domain.js';
import { GatewayError, sseErrorEvent } from '../errors.js';
import type { GatewayResponse } from '../http/types.js';
import type { Resolution } from '../routing/resolve-chat.js';
import { collectEvents, oneBatch, type StreamBatches, type StreamOutcome } from '../upstream/upstream.js';
import { StreamAccumulator } from './chat-accumulator.js';
import { ChunkWriter, DONE } from './chat-chunks.js';
import { estimateUsage, moderateChoices, recordUsage } from './chat-output.js';
import { ChunkedOutput, disclosedBytes } from './chunked-output.js';
import { gatewayBlock } from './gateway-block.js';
import type { RequestContext } from './request-context.js';
import { SseOut } from './sse-out.js';
import type { Services } from './services.js';
import { archivesPayloads, dispatchStream } from './dispatch.js';

/**
 * A stream can run for minutes, and its request may be megabytes of
 * conversation: once an upstream has accepted it, nothing of it is needed but
 * its prompt-token estimate (and, for the payload archive, the body sent). So
 * the request is dropped here, not carried through the stream: this frame
 * returns the relay rather than awaiting it, as chatCompletions returns this.
 * A suspended async frame keeps every local, used again or not.
 */
export async function streamChat(
  svc: Services, ctx: RequestContext, res: GatewayResponse,
  chat: ChatRequest, route: Resolution, wantBlock: boolean, promptTokens: number,
): Promise<void> {
  const upstream = await dispatchStream(svc, ctx, route, chat, res.signal);
  return relayChat(svc, ctx, res, upstream, route, wantBlock, promptTokens);
}

/**
 * Ends a stream under way with an error event. Module functions, not closures
 * in relayChat: a closure and its context per stream, held while it runs.
 */
function cut(ctx: RequestContext, out: SseOut, code: 'upstream_error' | 'content_blocked', message: string): void {
  out.abort(code, sseErrorEvent(code, message, ctx.requestId));
}

function block(ctx: RequestContext, res: GatewayResponse, out: SseOut, category: string): void {
  const message = `The output was blocked by moderation (${category}).`;
  // No cleared output yet, sent or pending: the stream has not begun, so this is still a JSON error.
  if (!res.started && !out.hasOutput) throw new GatewayError('content_blocked', message);
  cut(ctx, out, 'content_blocked', message);
}

async function relayChat(
  svc: Services, ctx: RequestContext, res: GatewayResponse,
  upstream: StreamOutcome, route: Resolution, wantBlock: boolean, promptTokens: number,
): Promise<void> {
  const org = ctx.key!.organization_id;
  const acc = new StreamAccumulator();
  let batches: StreamBatches = upstream.events;
  const mode = svc.policy?.outputMode(org) ?? 'off';
  if (mode === 'buffered') {
    // The spec: the stream starts after moderation, not token by token.
    const all = await collectEvents(batches, svc.config.upstream.max_response_bytes);
    for (const ev of all) if (ev.type === 'chunk') acc.add(ev.chunk);
    await moderateChoices(svc, org, acc.completion);
    batches = oneBatch(all);
  }
  const moderator = mode === 'chunked' ? new ChunkedOutput(() => svc.policy!.chunked(org)) : undefined;
  const storePayload = archivesPayloads(svc, org);
  // Nobody reads the text: chunks are forwarded as the upstream wrote them, unparsed where the translator allows.
  const skim = mode === 'off' && !storePayload;
  const writer = new ChunkWriter(`chatcmpl_${ctx.requestId.slice(4)}`, route.entry.id, Math.floor(ctx.startedEpoch / 1000));
  const out = new SseOut(res, ctx, upstream.headers);

  for await (const batch of batches) {
    for (const ev of batch) {
      if (ev.type === 'error') {
        if (!out.started) throw new GatewayError('upstream_error', ev.message);
        return cut(ctx, out, 'upstream_error', ev.message);
      }
      if (ev.type !== 'chunk') continue;
      // Chunked moderation reads an unparsed chunk's content off its text where it can (pushPlain).
      const plain = moderator && ev.plain && !storePayload ? moderator.pushPlain(ev.raw!, ev.plain.prefix.length) : undefined;
      if (plain) {
        if (plain.blocked) return block(ctx, res, out, plain.category);
        acc.skim(ev, plain.seen);
        const raw = plain.raw;
        if (raw !== undefined) out.add(writer.plainLine({ raw, plain: ev.plain, get chunk() { return JSON.parse(raw) as ChatChunk; } }), plain.shown);
        continue;
      }
      if (skim) {
        const bytes = ev.plain ? ev.outputBytes ?? 0 : disclosedBytes(ev.chunk);
        acc.skim(ev, bytes);
        if (ev.plain) { out.add(writer.plainLine(ev), bytes); continue; }
      } else if (mode !== 'buffered') {
        acc.add(ev.chunk);
      }
      let chunk: ChatChunk | undefined = ev.chunk;
      let raw = ev.raw;
      if (moderator) {
        const cleared = moderator.push(chunk);
        if (cleared.blocked) return block(ctx, res, out, cleared.category);
        chunk = cleared.chunk;
        if (cleared.changed) raw = undefined;
      }
      if (chunk) out.add(writer.line(chunk, raw), disclosedBytes(chunk));
    }
    // Under chunked moderation the stream commits to 200 only with the first cleared output,
    // so a block before any is still a plain JSON error. The upstream's last batch is not
    // flushed on its own: it leaves with the stream's end, one socket write instead of two.
    if ((!moderator || out.hasOutput) && !batches.drained) await out.flush();
    if (res.aborted) return out.clientLeft();
  }
  if (res.aborted) return out.clientLeft();
  const usage = acc.usage ?? estimateUsage(promptTokens, acc.outputChars);
  recordUsage(ctx, route, usage);
  ctx.trace.status_code = 200;
  if (storePayload) ctx.trace.payload = { request: JSON.parse(upstream.sent), response: { ...acc.completion, usage } };
  // The upstream's own usage chunk already went out as the final chunk; only an estimate needs one of its own.
  if (!acc.usage) out.add(writer.tail(usage), 0);
  if (wantBlock) out.add(writer.tail(usage, gatewayBlock(ctx)), 0);
  out.end(DONE);
}
