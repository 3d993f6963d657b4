// /v1/responses for providers with a native Responses API: the caller's body
// goes upstream with every field kept (only the model, and the input and
// instructions after DLP, are replaced); the answer comes back as the
// upstream sent it, with `model` (and the gateway block) written. Both ways
// those members are spliced into the sender's own text, which keeps every
// other byte and saves re-serialising a long body. The
// upstream's own resp_ id is kept, so its previous_response_id chains work
// natively. Moderation is buffered on this path in both modes: every output
// text of the stream is checked before any event leaves, however it ends
// (chunked windows over typed events would change what .done events carry).
// Storing off means storing off upstream too: the body then says store false.
import type { StreamEvent, Usage } from '../domain.js';
import { GatewayError } from '../errors.js';
import type { GatewayResponse } from '../http/types.js';
import { keysReadOneWay } from '../providers/json-keys.js';
import { withInnerMembers, withMembers } from '../providers/json-members.js';
import type { NativeBody } from '../providers/openai-compatible/responses.js';
import { isObj, type Item, type Json, type ResponseObject } from '../responses/types.js';
import { estimateTextTokens } from '../routing/token-estimate.js';
import { collectEvents, oneBatch, STOP, type BatchSink, type SinkResult, type StreamOutcome } from '../upstream/stream-batches.js';
import { inBandFailure } from '../upstream/upstream-errors.js';
import { recordUsage } from './chat-output.js';
import { gatewayBlock } from './gateway-block.js';
import { sendJson } from './reply.js';
import { HANDED_OFF, type RequestContext } from './request-context.js';
import { chainItems, loadChain } from './responses-conversation.js';
import { chatUsageOf, markStoring, moderateOutput, moderateTexts, outputTexts, releaseRequest, saveResponse, streamedTexts, TEXT_DELTAS, type Prepared } from './responses-common.js';
import type { Services } from './services.js';
import { SseOut } from './sse-out.js';
import { endStream } from './stream-end.js';
import { dropEventAlternatives, dropOutputAlternatives } from './token-alternatives.js';
import { archivesPayloads, dispatchNative } from './dispatch.js';

/**
 * Items replayed to an upstream that never saw them: our ids mean nothing
 * there, and reasoning, or a call's extra_content (another provider's
 * signature), carries nothing it can read and is a member it would refuse.
 */
const replayable = (items: Item[]): Item[] =>
  items.filter((it) => it.type !== 'reasoning').map(({ id: _id, status: _status, extra_content: _extra, ...rest }) => rest as Item);

/**
 * The input items to send. A reference to an item this upstream stored
 * itself goes on as the caller wrote it, unless DLP changed the item: the
 * upstream reads its own copy. Any other (an item of the translated path, of
 * another provider, or one DLP changed) goes as the item, since the upstream
 * does not hold it, or holds it unredacted. The caller's own array when
 * nothing was resolved or changed.
 */
function sentItems(p: Prepared): Item[] {
  const { refs, items: resolved } = p.resolved;
  if (refs.size === 0) return p.items;
  let same = true;
  const out = p.items.flatMap((it, i) => {
    const row = refs.get(i);
    if (row === undefined) {
      same &&= it === p.req.input[i];
      return [it];
    }
    if (row.native && row.provider === p.route.entry.provider && it === resolved[i]) return [p.req.input[i]!];
    same = false;
    return replayable([it]);
  });
  return same ? p.req.input : out;
}

/**
 * The body for the upstream: what the caller sent, with only what the gateway
 * changed as `members`. A chain the upstream did not make itself (another
 * provider, the translated path) is sent in full.
 */
async function upstreamBody(svc: Services, p: Prepared): Promise<NativeBody> {
  const members: Json = {};
  const items = sentItems(p);
  // DLP copies only what it changes: the same array means the caller's input, as written.
  if (items !== p.req.input) {
    members.input = p.req.inputWasString && items.length === 1 && typeof items[0]!.content === 'string' ? items[0]!.content : items;
  }
  if (p.instructions !== p.req.instructions) members.instructions = p.instructions;
  // Otherwise OpenAI would keep what the caller, its organisation or the gateway said not to keep.
  if (!p.store && p.req.raw.store !== false) members.store = false;
  const value: Json = { ...p.req.raw, ...members };
  let text = p.req.text;
  const prev = p.req.previous_response_id;
  if (prev) {
    // The ownership check: the upstream holds every organisation's responses under the gateway's one credential.
    const row = p.chain?.at(-1) ?? await svc.responses.get(p.org, prev);
    if (!row) throw new GatewayError('not_found', `No stored response "${prev}" for this organisation.`, { param: 'previous_response_id' });
    // A chain DLP changed goes whole too: the upstream would replay its own copy, unredacted (until 2026-11-29 it did).
    if (!row.native || row.provider !== p.route.entry.provider || p.history !== undefined) {
      // A member to remove: the splice only replaces and adds, so this body is re-serialised.
      delete value.previous_response_id;
      value.input = [...replayable(p.history ?? chainItems(p.chain ?? await loadChain(svc, p.org, prev))), ...items];
      // The members are written over the value: an input DLP changed must not replace the replayed one.
      delete members.input;
      text = undefined;
    }
  }
  return { value, members, text };
}

/** The estimate of a response's usage: its prompt (the items sent) and `outputChars` of output, about four to a token. */
function estimatedUsage(p: Prepared, outputChars: number): Usage {
  const out = Math.ceil(outputChars / 4);
  const prompt = estimateTextTokens(JSON.stringify(p.items));
  return { prompt_tokens: prompt, completion_tokens: out, total_tokens: prompt + out };
}

/** A collected stream's usage: that of the last response object carrying one, else the estimate of `texts`. */
function collectedUsage(p: Prepared, events: readonly StreamEvent[], texts: readonly string[]): Usage {
  for (let i = events.length - 1; i >= 0; i--) {
    const ev = events[i]!;
    const usage = ev.type === 'event' && isObj(ev.data.response) ? chatUsageOf(ev.data.response.usage) : undefined;
    if (usage) return usage;
  }
  return estimatedUsage(p, texts.join('').length);
}

/** Records the usage; returns what the gateway writes on the response object, written on it too. */
function settle(ctx: RequestContext, p: Prepared, response: Json): Json {
  recordUsage(ctx, p.route, chatUsageOf(response.usage) ?? estimatedUsage(p, outputTexts(response.output).join('').length));
  const own: Json = { model: p.route.entry.id };
  if (p.wantBlock) own.gateway = gatewayBlock(ctx);
  Object.assign(response, own);
  return own;
}

export async function nativeResponse(svc: Services, ctx: RequestContext, res: GatewayResponse, p: Prepared): Promise<void | typeof HANDED_OFF> {
  // A background response is answered "queued" and finishes upstream, out of sight: its output would
  // never be moderated, metered or stored, and GET /v1/responses/{id} would answer "queued" forever.
  if (p.req.raw.background === true) {
    throw new GatewayError('invalid_request', 'background is not supported: sluice moderates, meters and stores each response as it completes; send the request without it.', { param: 'background' });
  }
  const body = await upstreamBody(svc, p);
  if (p.req.stream) return nativeStream(svc, ctx, res, p, body);
  const keepSent = archivesPayloads(svc, p.org);
  const answer = await dispatchNative(svc, ctx, p.route, res.signal, (t, s) => svc.upstream.responses(t, body, s, keepSent));
  const response = answer.body;
  if (!isObj(response) || !Array.isArray(response.output) || typeof response.id !== 'string') throw new GatewayError('upstream_error', 'The upstream returned no response object.');
  // Charged before it is moderated, as chat's (chat-completions.ts).
  const own = settle(ctx, p, response);
  if (p.mode !== 'off') await moderateOutput(svc, p.org, response);
  // An upstream's unasked alternatives are emptied (token-alternatives.ts): the answer is then written from its parse.
  const dropped = p.mode !== 'off' && dropOutputAlternatives(response.output);
  ctx.trace.status_code = 200;
  if (keepSent) ctx.trace.payload = { request: JSON.parse(answer.sent), response };
  await markStoring(svc, p, response);
  // Moderation read what JSON.parse kept of a repeated key; the reader's parser may keep the other value.
  const text = !dropped && (p.mode === 'off' || keysReadOneWay(answer.text)) ? answer.text : undefined;
  sendJson(res, 200, (text === undefined ? undefined : withMembers(text, own)) ?? JSON.stringify(response), ctx.requestId, answer.headers);
  saveResponse(svc, ctx, p, response as ResponseObject, true);
}

const WITH_RESPONSE = new Set(['response.created', 'response.in_progress', 'response.completed', 'response.incomplete', 'response.failed']);
const TERMINAL = new Set(['response.completed', 'response.incomplete']);

/** As chat's (chat-stream.ts): the body built for the upstream, and the caller's text, are dropped once it accepted the stream. */
async function nativeStream(svc: Services, ctx: RequestContext, res: GatewayResponse, p: Prepared, body: NativeBody): Promise<typeof HANDED_OFF> {
  const keepSent = archivesPayloads(svc, p.org);
  const upstream = await dispatchNative(svc, ctx, p.route, res.signal, (t, s) => svc.upstream.responsesStream(t, body, s, keepSent));
  releaseRequest(p);
  return relayNative(svc, ctx, res, p, upstream);
}

async function relayNative(svc: Services, ctx: RequestContext, res: GatewayResponse, p: Prepared, upstream: StreamOutcome): Promise<typeof HANDED_OFF> {
  let batches = upstream.events;
  if (p.mode !== 'off') {
    const all = await collectEvents(batches, svc.config.upstream.max_response_bytes);
    // Charged before it is moderated, as chat's: the terminal response's usage, else the estimate (the relay settles again).
    const texts = streamedTexts(all);
    recordUsage(ctx, p.route, collectedUsage(p, all, texts));
    await moderateTexts(svc, p.org, texts);
    batches = oneBatch(all);
  }
  batches.pump(new NativeRelay(svc, ctx, res, p, new SseOut(res, ctx, upstream.headers, svc.streams), upstream.sent));
  return HANDED_OFF;
}

/** The upstream's typed events as it sent them, `model` written into those carrying the response (pushed: stream-batches.ts). */
class NativeRelay implements BatchSink {
  private seq = 0;
  private final: Json | undefined;
  /** A terminal event charged the response's usage (settle). */
  private settled = false;
  /** The terminal event whose pending marker has landed (markStoring). */
  private marked: StreamEvent | undefined;

  constructor(
    private readonly svc: Services, private readonly ctx: RequestContext, private readonly res: GatewayResponse,
    private readonly p: Prepared, private readonly out: SseOut,
    /** The body sent, for the payload archive. */
    private readonly sent: string,
  ) {}

  batch(events: StreamEvent[], last: boolean): SinkResult {
    return this.relay(events, 0, last);
  }

  /** From `from` on: a terminal event waits for its pending marker, then the batch resumes at it. */
  private relay(events: StreamEvent[], from: number, last: boolean): SinkResult {
    const { ctx, res, out, p } = this;
    for (let i = from; i < events.length; i++) {
      const ev = events[i]!;
      if (ev.type === 'error') {
        if (!res.started && !out.started) throw inBandFailure(ev.message, ev.upstream);
        out.abort('upstream_error', this.failEvents('upstream_error', ev.message));
        return STOP;
      }
      if (ev.type !== 'event') continue;
      const d = ev.data;
      if (typeof d.sequence_number === 'number') this.seq = d.sequence_number;
      // The caller may chain as soon as it reads a terminal event, before the stream ends.
      if (TERMINAL.has(ev.name) && isObj(d.response) && this.marked !== ev) {
        this.marked = ev;
        return markStoring(this.svc, p, d.response).then(() => this.relay(events, i, last));
      }
      // As for the JSON answer: under moderation, only text that reads one way goes as the upstream wrote it,
      // and only with no alternatives to empty (token-alternatives.ts).
      let raw = p.mode !== 'off' && ev.raw !== undefined && !keysReadOneWay(ev.raw) ? undefined : ev.raw;
      if (p.mode !== 'off' && dropEventAlternatives(d)) raw = undefined;
      if (WITH_RESPONSE.has(ev.name) && isObj(d.response)) {
        let own: Json = { model: p.route.entry.id };
        if (TERMINAL.has(ev.name)) {
          own = settle(ctx, p, d.response);
          this.settled = true;
        } else {
          d.response.model = own.model;
        }
        this.final = d.response;
        raw = (raw === undefined ? undefined : withInnerMembers(raw, 'response', own)) ?? JSON.stringify(d);
      }
      const bytes = typeof d.delta === 'string' && TEXT_DELTAS.has(ev.name) ? Buffer.byteLength(d.delta) : 0;
      out.add(`event: ${ev.name}\ndata: ${raw ?? JSON.stringify(d)}\n\n`, bytes);
      if (ev.name === 'error' || ev.name === 'response.failed') { ctx.trace.stream_aborted = true; ctx.trace.error_code = 'upstream_error'; }
    }
    return out.endBatch(last);
  }

  private failEvents(code: string, message: string): string {
    const ev = (type: string, fields: Json) => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: ++this.seq, ...fields })}\n\n`;
    return ev('response.failed', { response: { ...(this.final ?? {}), status: 'failed', error: { code, message } } })
      + ev('error', { code, message, param: null, error: { code, message, type: 'gateway_error' }, request_id: this.ctx.requestId });
  }

  done(ended: boolean, err?: unknown): void {
    endStream(this.ctx, ended, err, () => this.finish(), () => this.chargeSoFar());
  }

  /**
   * As chat's (chat-stream.ts): a stream cut after it began, or ended without
   * a completed response, is charged what the upstream made of it. A terminal
   * event already charged its usage; otherwise the usage of the last response
   * object seen (response.failed carries one), else the estimate of the prompt
   * and the output sent.
   */
  private chargeSoFar(): void {
    if (!this.out.started || this.settled) return;
    recordUsage(this.ctx, this.p.route, chatUsageOf(this.final?.usage) ?? estimatedUsage(this.p, this.out.outputBytes));
  }

  /** The upstream ended and every event went out. */
  private finish(): void {
    const { svc, ctx, p, out, final, sent } = this;
    // A caller gone while the upstream was silent ends the stream with no error event (exchange.ts).
    if (this.res.aborted) {
      this.chargeSoFar();
      return out.clientLeft();
    }
    ctx.trace.status_code = 200;
    // Ended by response.failed or an error event, with no terminal response to settle: still charged what was made.
    this.chargeSoFar();
    out.end();
    if (final && (final.status === 'completed' || final.status === 'incomplete')) {
      if (archivesPayloads(svc, p.org)) ctx.trace.payload = { request: JSON.parse(sent), response: final };
      saveResponse(svc, ctx, p, final as ResponseObject, true);
    }
  }
}
