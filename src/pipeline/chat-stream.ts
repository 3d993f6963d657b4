// The streaming path. Chunks are forwarded as they arrive; status and headers
// go out with the first one, so a failure before it is still a JSON error.
// Buffered moderation collects the whole output first and replays it; chunked
// moderation releases only what its windows have cleared.
import type { ChatChunk, ChatRequest, PlainHead, StreamEvent, Usage } from '../domain.js';
import { GatewayError, sseErrorEvent } from '../errors.js';
import type { GatewayResponse } from '../http/types.js';
import type { Resolution } from '../routing/resolve-chat.js';
import { collectEvents, oneBatch, STOP, type BatchSink, type SinkResult, type StreamOutcome } from '../upstream/stream-batches.js';
import { inBandFailure } from '../upstream/upstream-errors.js';
import { StreamAccumulator } from './chat-accumulator.js';
import { ChunkWriter, DONE } from './chat-chunks.js';
import { estimateUsage, moderateChoices, recordUsage } from './chat-output.js';
import { OneWayChunks } from './one-way-chunks.js';
import { ChunkedOutput, disclosedBytes } from './chunked-output.js';
import { gatewayBlock } from './gateway-block.js';
import { HeldThinkingBlocks } from './held-thinking-blocks.js';
import { HANDED_OFF, type RequestContext } from './request-context.js';
import { SseOut } from './sse-out.js';
import { chunkWithoutAlternatives } from './token-alternatives.js';
import { endStream, isBlock } from './stream-end.js';
import type { Services } from './services.js';
import { archivesPayloads, dispatchStream } from './dispatch.js';

/**
 * A stream can run for minutes, and its request may be megabytes of
 * conversation: once an upstream has accepted it, nothing of it is needed but
 * its prompt-token estimate (and, for the payload archive, the body sent). So
 * the request is dropped here: this frame returns once the relay is started,
 * as chatCompletions returns this, and the relay ends the request (ctx.end).
 * A suspended async frame keeps every local, used again or not.
 */
export async function streamChat(
  svc: Services, ctx: RequestContext, res: GatewayResponse,
  chat: ChatRequest, route: Resolution, wantBlock: boolean, promptTokens: number,
): Promise<typeof HANDED_OFF> {
  const upstream = await dispatchStream(svc, ctx, route, chat, res.signal);
  const org = ctx.key!.organization_id;
  const mode = svc.policy?.outputMode(org) ?? 'off';
  if (mode === 'buffered') return relayBuffered(svc, ctx, res, upstream, route, wantBlock, promptTokens, org, chat.n);
  const moderator = mode === 'chunked' ? new ChunkedOutput(() => svc.policy!.chunked(org), chat.n) : undefined;
  upstream.events.pump(new ChatRelay(svc, ctx, res, upstream, route, wantBlock, promptTokens, new StreamAccumulator(), moderator));
  return HANDED_OFF;
}

/** The spec: the stream starts after moderation, not token by token. */
async function relayBuffered(
  svc: Services, ctx: RequestContext, res: GatewayResponse,
  upstream: StreamOutcome, route: Resolution, wantBlock: boolean, promptTokens: number, org: string, choices: number,
): Promise<typeof HANDED_OFF> {
  const acc = new StreamAccumulator(true, choices);
  const all = await collectEvents(upstream.events, svc.config.upstream.max_response_bytes);
  for (const ev of all) if (ev.type === 'chunk') acc.add(ev.chunk);
  // Charged before it is moderated: a blocked answer was made, and its provider bills it (docs/limits.md).
  recordUsage(ctx, route, acc.usage ?? estimateUsage(promptTokens, acc.outputChars));
  await moderateChoices(svc, org, acc.completion, acc);
  oneBatch(all).pump(new ChatRelay(svc, ctx, res, upstream, route, wantBlock, promptTokens, acc, undefined, true));
  return HANDED_OFF;
}

/**
 * Relays a stream's batches as they arrive, called by the exchange (push):
 * a stream waiting on its model holds this object and no promise, so the
 * thousands of them a gateway holds cost no garbage per chunk.
 */
class ChatRelay implements BatchSink {
  private readonly storePayload: boolean;
  /** Nobody reads the text: chunks are forwarded as the upstream wrote them, unparsed where the translator allows. */
  private readonly skim: boolean;
  private readonly writer: ChunkWriter;
  private readonly out: SseOut;
  /** Under moderation, whether a chunk's text may go out as written (one-way-chunks.ts). */
  private readonly oneWay: OneWayChunks | undefined;
  /** Anthropic's signed thinking blocks, sent together with the finish (held-thinking-blocks.ts). */
  private readonly blocks: HeldThinkingBlocks | undefined;

  constructor(
    svc: Services, private readonly ctx: RequestContext, private readonly res: GatewayResponse,
    private readonly upstream: StreamOutcome, private readonly route: Resolution, private readonly wantBlock: boolean,
    private readonly promptTokens: number, private readonly acc: StreamAccumulator,
    private readonly moderator: ChunkedOutput | undefined, private readonly buffered = false,
  ) {
    this.storePayload = archivesPayloads(svc, ctx.key!.organization_id);
    this.skim = !buffered && !moderator && !this.storePayload;
    if (buffered || moderator) this.oneWay = new OneWayChunks();
    // Route.entry is the model that answered, fallbacks included (dispatch.ts). Other upstreams' blocks go as they came.
    if (svc.config.providers.get(route.entry.provider)?.kind === 'anthropic') this.blocks = new HeldThinkingBlocks();
    this.writer = new ChunkWriter(ctx.completionId, route.entry.id, Math.floor(ctx.startedEpoch / 1000));
    this.out = new SseOut(res, ctx, upstream.headers, svc.streams);
  }

  batch(batch: StreamEvent[], last: boolean): SinkResult {
    const { out, writer, acc, moderator, storePayload } = this;
    for (const ev of batch) {
      if (ev.type === 'error') {
        if (!out.started) throw inBandFailure(ev.message, ev.upstream, this.upstream.headers);
        return this.cut('upstream_error', ev.message);
      }
      if (ev.type !== 'chunk') continue;
      // Chunked moderation reads an unparsed chunk's content off its text where it can (pushPlain).
      const plain = moderator && ev.plain && !storePayload ? moderator.pushPlain(ev.raw!, ev.plain.prefix.length) : undefined;
      if (plain) {
        if (plain.blocked) return this.block(plain.category);
        acc.skim(ev, plain.seen);
        const raw = plain.raw;
        if (raw !== undefined) out.add(writer.plainLine({ raw, plain: ev.plain, get chunk() { return JSON.parse(raw) as ChatChunk; } }), plain.shown);
        continue;
      }
      if (this.skim) {
        const bytes = ev.plain ? ev.outputBytes ?? 0 : disclosedBytes(ev.chunk);
        acc.skim(ev, bytes);
        if (ev.plain) { out.add(writer.plainLine(ev), bytes); continue; }
      } else if (!this.buffered) {
        acc.add(ev.chunk);
      }
      let chunk: ChatChunk | undefined = ev.chunk;
      // Under moderation the upstream's text goes out only if it reads one way: moderation read what JSON.parse kept of a repeated key.
      let raw = ev.raw !== undefined && this.oneWay && !this.oneWay.readsOneWay(ev.raw, (ev.plain ?? ev.head)?.prefix.length) ? undefined : ev.raw;
      // An upstream's unasked alternatives are emptied (token-alternatives.ts); chunked moderation drops all logprobs.
      if (this.buffered) {
        const kept = chunkWithoutAlternatives(chunk);
        if (kept !== chunk) [chunk, raw] = [kept, undefined];
      }
      if (moderator) {
        // The usage chunk (no choices) is a stream's last, by OpenAI's contract: what the windows
        // still hold goes out before it, as a finish reason would have released it. A stream that
        // ends with [DONE] and no finish reason would otherwise show text after its usage.
        if (chunk.choices.length === 0 && chunk.usage && this.releaseHeld(moderator) === STOP) return STOP;
        const cleared = moderator.push(chunk);
        if (cleared.blocked) return this.block(cleared.category);
        chunk = cleared.chunk;
        if (cleared.changed) raw = undefined;
      }
      if (chunk) this.send(chunk, raw, ev.head);
    }
    // Under chunked moderation the stream commits to 200 only with the first cleared output,
    // so a block before any is still a plain JSON error.
    return out.endBatch(last || (!!moderator && !out.hasOutput));
  }

  /** A parsed chunk to the caller; `raw`, its upstream text, is dropped if the held thinking blocks change it. */
  private send(chunk: ChatChunk, raw?: string, head?: PlainHead): void {
    // The usage chunk is a stream's last: blocks whose choice never finished go out before it.
    if (this.blocks && chunk.choices.length === 0) this.sendHeldBlocks();
    const sent = this.blocks ? this.blocks.pass(chunk) : chunk;
    if (!sent) return;
    this.out.add(this.writer.line(sent, sent === chunk ? raw : undefined, sent === chunk ? head : undefined), disclosedBytes(sent));
  }

  private sendHeldBlocks(): void {
    const rest = this.blocks?.rest();
    if (rest) this.out.add(this.writer.line(rest, undefined), 0);
  }

  /** What chunked moderation still holds, checked and sent in a chunk of its own; STOP if it was blocked. */
  private releaseHeld(moderator: ChunkedOutput): typeof STOP | undefined {
    const rest = moderator.end();
    if (rest.blocked) return this.block(rest.category);
    if (rest.chunk) this.send(rest.chunk);
    return undefined;
  }

  /** Ends a stream under way with an error event. */
  private cut(code: 'upstream_error' | 'content_blocked', message: string): typeof STOP {
    this.out.abort(code, sseErrorEvent(code, message, this.ctx.requestId));
    return STOP;
  }

  private block(category: string): typeof STOP {
    const message = `The output was blocked by moderation (${category}).`;
    // No cleared output yet, sent or pending: the stream has not begun, so this is still a JSON error.
    if (!this.res.started && !this.out.hasOutput) throw new GatewayError('content_blocked', message);
    return this.cut('content_blocked', message);
  }

  done(ended: boolean, err?: unknown): void {
    endStream(this.ctx, ended, err, () => this.finish(), (e) => this.chargeSoFar(e));
  }

  /**
   * A stream cut short after it began (the caller gone, a block, an upstream
   * failure) is charged what the upstream made of it, as the provider bills
   * it: its usage if it sent one, else the estimate of the prompt and the
   * output seen, even if the caller saw none of it (it left while chunked
   * moderation held the output back). A stream whose upstream made nothing is
   * a failed call, whose estimate goes back (docs/limits.md), unless
   * moderation blocked it.
   */
  private chargeSoFar(err?: unknown): void {
    if (!this.res.started && !isBlock(err) && !this.acc.madeOutput) return;
    const usage = this.acc.usage ?? estimateUsage(this.promptTokens, this.acc.outputChars);
    recordUsage(this.ctx, this.route, usage);
    if (this.storePayload) this.archiveCut(err, usage);
  }

  /**
   * A stream that was charged is archived, cut or not: the request as sent and
   * the completion its chunks added up to so far, marked `partial` with why it
   * was cut (the trace's error code). Moderation's blocked text is not kept, as
   * a blocked JSON answer is not archived at all: after a block the response
   * holds no output, only how many bytes the caller had been shown.
   */
  private archiveCut(err: unknown, usage: Usage): void {
    const { ctx, acc } = this;
    const t = ctx.trace;
    const blocked = isBlock(err) || t.error_code === 'content_blocked';
    const reason = blocked ? 'content_blocked' : this.res.aborted ? 'client_closed' : t.error_code ?? (err instanceof GatewayError ? err.code : 'upstream_error');
    const id = ctx.completionId;
    const model = this.route.entry.id;
    const response = blocked
      ? { id, model, object: 'chat.completion', usage, partial: true, error_code: reason, disclosed_bytes: this.out.outputBytes }
      : { ...acc.completion, id, model, usage, partial: true, error_code: reason };
    t.payload = { request: JSON.parse(this.upstream.sent), response };
  }

  /** The upstream ended and every batch went out. */
  private finish(): void {
    const { ctx, out, writer, acc } = this;
    if (this.res.aborted) {
      this.chargeSoFar();
      return out.clientLeft();
    }
    if (this.moderator && this.releaseHeld(this.moderator) === STOP) return;
    this.sendHeldBlocks();
    const usage = acc.usage ?? estimateUsage(this.promptTokens, acc.outputChars);
    recordUsage(ctx, this.route, usage);
    ctx.trace.status_code = 200;
    // As the JSON path archives its answer: the upstream's members, with the id and model the caller was given.
    if (this.storePayload) ctx.trace.payload = { request: JSON.parse(this.upstream.sent), response: { ...acc.completion, id: ctx.completionId, model: this.route.entry.id, usage } };
    // The upstream's own usage chunk already went out as the final chunk; only an estimate needs one of its own.
    if (!acc.usage) out.add(writer.tail(usage), 0);
    if (this.wantBlock) out.add(writer.tail(usage, gatewayBlock(ctx)), 0);
    out.end(DONE);
  }
}
