// /v1/responses for providers without a Responses API: the request becomes a
// chat request (instructions as the system message, then the stored
// conversation, then this input), goes through the chat adapters, and the
// chat answer or chunk stream becomes a response object or typed events.
// Moderation runs on the chat side, as for chat: buffered over the whole
// completion, chunked through ChunkedOutput before any event is built.
import type { ChatMessage, ChatRequest, StreamEvent } from '../domain.js';
import { GatewayError } from '../errors.js';
import type { GatewayResponse } from '../http/types.js';
import { completeResponse, ItemIds, responseShell } from '../responses/chat-to-response.js';
import { itemsToMessages } from '../responses/items-to-messages.js';
import { inResponsesTerms, toChatRequest } from '../responses/request-to-chat.js';
import { ResponsesEventWriter } from '../responses/stream-events.js';
import type { ResponseObject } from '../responses/types.js';
import { collectEvents, oneBatch, STOP, type BatchSink, type SinkResult, type StreamOutcome } from '../upstream/stream-batches.js';
import { inBandFailure } from '../upstream/upstream-errors.js';
import { definitionChars, estimatePromptTokens } from '../routing/token-estimate.js';
import { archivesPayloads, dispatchChat, dispatchStream } from './dispatch.js';
import { StreamAccumulator } from './chat-accumulator.js';
import { completionUsage, moderateChoices, recordUsage } from './chat-output.js';
import { ChunkedOutput, disclosedBytes } from './chunked-output.js';
import { gatewayBlock } from './gateway-block.js';
import { sendJson } from './reply.js';
import { HANDED_OFF, type RequestContext } from './request-context.js';
import { chainItems, loadChain } from './responses-conversation.js';
import { markStoring, releaseRequest, saveResponse, type Prepared } from './responses-common.js';
import type { Services } from './services.js';
import { SseOut } from './sse-out.js';
import { endStream, isBlock } from './stream-end.js';

async function chatRequestFor(svc: Services, p: Prepared): Promise<ChatRequest> {
  const prev = p.req.previous_response_id;
  const history = prev ? p.history ?? chainItems(p.chain ?? await loadChain(svc, p.org, prev)) : [];
  const messages: ChatMessage[] = p.instructions !== undefined ? [{ role: 'system', content: p.instructions }] : [];
  // Fallbacks to another kind are left to their adapter: Gemini drops thinking blocks as it drops reasoning text.
  const kind = svc.config.providers.get(p.route.entry.provider)?.kind;
  const carry = { thinking: kind === 'anthropic', extraContent: kind === 'gemini' };
  messages.push(...itemsToMessages(history, () => 'previous_response_id', carry), ...itemsToMessages(p.items, (i) => `input.${i}`, carry));
  return toChatRequest(p.req, messages);
}

function shellFor(ctx: RequestContext, p: Prepared): { shell: ResponseObject; ids: ItemIds } {
  const hex = ctx.requestId.slice(4);
  // The instructions echoed are those the upstream saw, as a native upstream echoes them: the response is
  // stored and archived, and what DLP removed must not come back into either through the echo.
  const req = { ...p.req, instructions: p.instructions };
  return { shell: responseShell(`resp_${hex}`, Math.floor(ctx.startedEpoch / 1000), p.route.entry.id, req, p.store), ids: new ItemIds(hex) };
}

export async function translatedResponse(svc: Services, ctx: RequestContext, res: GatewayResponse, p: Prepared): Promise<void | typeof HANDED_OFF> {
  const chat = await chatRequestFor(svc, p);
  try {
    return await translatedAnswer(svc, ctx, res, p, chat);
  } catch (err) {
    // The chat adapters name chat fields; the caller sent a Responses request.
    throw inResponsesTerms(err, chat);
  }
}

async function translatedAnswer(svc: Services, ctx: RequestContext, res: GatewayResponse, p: Prepared, chat: ChatRequest): Promise<void | typeof HANDED_OFF> {
  const promptTokens = estimatePromptTokens(chat.messages, definitionChars(chat.raw));
  if (chat.stream) return translatedStream(svc, ctx, res, p, chat, promptTokens);
  const { completion, sent, headers } = await dispatchChat(svc, ctx, p.route, chat, res.signal);
  // Charged before it is moderated, as chat's (chat-completions.ts).
  const usage = completionUsage(promptTokens, completion);
  recordUsage(ctx, p.route, usage);
  if (p.mode !== 'off') await moderateChoices(svc, p.org, completion);
  ctx.trace.status_code = 200;
  const { shell, ids } = shellFor(ctx, p);
  const response = completeResponse(shell, completion, usage, ids);
  if (p.wantBlock) response.gateway = gatewayBlock(ctx);
  if (archivesPayloads(svc, p.org)) ctx.trace.payload = { request: JSON.parse(sent), response };
  await markStoring(svc, p, response);
  sendJson(res, 200, JSON.stringify(response), ctx.requestId, headers);
  saveResponse(svc, ctx, p, response, false);
}

/** As chat's (chat-stream.ts): the converted request, history and all, is dropped once the upstream accepted it. */
async function translatedStream(svc: Services, ctx: RequestContext, res: GatewayResponse, p: Prepared, chat: ChatRequest, promptTokens: number): Promise<typeof HANDED_OFF> {
  const upstream = await dispatchStream(svc, ctx, p.route, chat, res.signal);
  releaseRequest(p);
  return relayResponse(svc, ctx, res, p, upstream, promptTokens);
}

async function relayResponse(svc: Services, ctx: RequestContext, res: GatewayResponse, p: Prepared, upstream: StreamOutcome, promptTokens: number): Promise<typeof HANDED_OFF> {
  // One choice: the Responses API has no n.
  const acc = new StreamAccumulator(p.mode === 'buffered', 1);
  let batches = upstream.events;
  if (p.mode === 'buffered') {
    const all = await collectEvents(batches, svc.config.upstream.max_response_bytes);
    for (const ev of all) if (ev.type === 'chunk') acc.add(ev.chunk);
    recordUsage(ctx, p.route, completionUsage(promptTokens, acc.completion));
    await moderateChoices(svc, p.org, acc.completion, acc);
    batches = oneBatch(all);
  }
  batches.pump(new TranslatedRelay(svc, ctx, res, p, new SseOut(res, ctx, upstream.headers, svc.streams), acc, upstream.sent, promptTokens));
  return HANDED_OFF;
}

/** Chat chunks as typed Responses events (pushed: stream-batches.ts). */
class TranslatedRelay implements BatchSink {
  private readonly moderator: ChunkedOutput | undefined;
  private readonly writer: ResponsesEventWriter;
  private readonly shell: ResponseObject;

  constructor(
    private readonly svc: Services, private readonly ctx: RequestContext, private readonly res: GatewayResponse,
    private readonly p: Prepared, private readonly out: SseOut, private readonly acc: StreamAccumulator,
    /** The body sent, for the payload archive. */
    private readonly sent: string, private readonly promptTokens: number,
  ) {
    this.moderator = p.mode === 'chunked' ? new ChunkedOutput(() => svc.policy!.chunked(p.org), 1) : undefined;
    const { shell, ids } = shellFor(ctx, p);
    this.shell = shell;
    this.writer = new ResponsesEventWriter(shell, ids);
    out.add(this.writer.start());
  }

  private fail(code: 'upstream_error' | 'content_blocked', message: string): typeof STOP {
    this.out.abort(code, this.writer.fail(code, message, this.ctx.requestId));
    return STOP;
  }

  /** No output yet, sent or pending: the stream has not begun, so a block is still a JSON error. */
  private block(category: string): typeof STOP {
    const message = `The output was blocked by moderation (${category}).`;
    if (!this.res.started && !this.out.hasOutput) throw new GatewayError('content_blocked', message);
    return this.fail('content_blocked', message);
  }

  batch(events: StreamEvent[], last: boolean): SinkResult {
    const { res, out, p, moderator } = this;
    for (const ev of events) {
      if (ev.type === 'error') {
        if (!res.started && !out.hasOutput) throw inBandFailure(ev.message, ev.upstream);
        return this.fail('upstream_error', ev.message);
      }
      if (ev.type !== 'chunk') continue;
      if (p.mode !== 'buffered') this.acc.add(ev.chunk);
      let chunk = ev.chunk;
      if (moderator) {
        const cleared = moderator.push(chunk);
        if (cleared.blocked) return this.block(cleared.category);
        if (!cleared.chunk) continue;
        chunk = cleared.chunk;
      }
      let events: string;
      try {
        events = this.writer.chunk(chunk);
      } catch (err) {
        // An answer part with no Responses form (contentOf): the stream's error event once it has begun.
        if (!(err instanceof GatewayError) || (!res.started && !out.hasOutput)) throw err;
        return this.fail('upstream_error', err.message);
      }
      out.add(events, disclosedBytes(chunk));
    }
    // The stream commits to 200 only with the first output, so a failure before any is still a JSON error.
    // The upstream's last batch leaves with response.completed, which waits for the pending marker
    // that has to land before that event anyway.
    return out.endBatch(last || (!!moderator && !out.hasOutput));
  }

  done(ended: boolean, err?: unknown): void {
    endStream(this.ctx, ended, err, () => this.finish(), (e) => this.chargeSoFar(e));
  }

  /** As chat's (chat-stream.ts): a stream cut after it began is charged what the upstream made of it. */
  private chargeSoFar(err?: unknown): void {
    if (!this.res.started && !isBlock(err) && !this.acc.madeOutput) return;
    const usage = completionUsage(this.promptTokens, this.acc.completion);
    recordUsage(this.ctx, this.p.route, usage);
    if (archivesPayloads(this.svc, this.p.org)) this.archiveCut(err);
  }

  /**
   * As chat's (chat-stream.ts): the request as sent and the response as far as
   * it was written, with `output_text` so far, marked `partial` with why it was
   * cut; after a block, no output.
   */
  private archiveCut(err: unknown): void {
    const t = this.ctx.trace;
    const blocked = isBlock(err) || t.error_code === 'content_blocked';
    const reason = blocked ? 'content_blocked' : this.res.aborted ? 'client_closed' : t.error_code ?? (err instanceof GatewayError ? err.code : 'upstream_error');
    const written = this.writer.response;
    const response = blocked
      ? { ...written, output: [], partial: true, error_code: reason, disclosed_bytes: this.out.outputBytes }
      // An item's text is written into it only when the item closes: what streamed of an open one is the chat text so far.
      : { ...written, output: [...written.output], output_text: this.acc.completion.choices[0]?.message?.content ?? '', partial: true, error_code: reason };
    t.payload = { request: JSON.parse(this.sent), response };
  }

  /** The upstream ended and every chunk was relayed. */
  private async finish(): Promise<void> {
    const { svc, ctx, p, out, writer, sent, promptTokens } = this;
    if (this.res.aborted) {
      this.chargeSoFar();
      return out.clientLeft();
    }
    if (this.moderator) {
      const rest = this.moderator.end();
      if (rest.blocked) return void this.block(rest.category);
      if (rest.chunk) out.add(writer.chunk(rest.chunk), disclosedBytes(rest.chunk));
    }
    const usage = completionUsage(promptTokens, this.acc.completion);
    recordUsage(ctx, p.route, usage);
    ctx.trace.status_code = 200;
    const extra = p.wantBlock ? { gateway: gatewayBlock(ctx) } : {};
    await markStoring(svc, p, this.shell);
    out.end(writer.end(usage, extra));
    const response = writer.response;
    if (archivesPayloads(svc, p.org)) ctx.trace.payload = { request: JSON.parse(sent), response };
    saveResponse(svc, ctx, p, response, false);
  }
}
