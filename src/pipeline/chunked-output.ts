// Chunked moderation over whole chunks. Every text a caller will read has its
// own moderator window: each choice's content, its refusal, its reasoning, the
// arguments of each of its tool calls and of a legacy function call (n > 1
// interleaves choices, and parallel tool calls interleave arguments, so one
// shared window would see text that is never contiguous for the reader). A
// chunk goes out carrying only what its windows released; a choice's finish
// reason releases the rest of that choice's windows into the same chunk.
// Thinking blocks (Anthropic's signed thinking, which comes whole and cannot
// be split) are checked joined and held until the thinking is over. Any
// other member's texts are sent as they came, and a number by itself,
// since a window would split what a client may keep whole, and are checked
// joined with what came before them in the same place (delta-trails.ts): a
// match they complete stops the stream before they go. So are a choice's own
// members beside its delta, and a chunk's beside its choices. A content that is a
// list of chunks (Mistral's) is windowed too (content-chunks.ts).
import { TEXT_MEMBERS, type ChatChunk, type ChunkChoice, type Delta, type ToolCallDelta } from '../domain.js';
import type { ChunkedModerator } from '../policy/types.js';
import { shownTexts } from '../policy/shown-texts.js';
import { isObj } from '../responses/types.js';
import { callIndex, checkIndexes } from './chunk-indexes.js';
import { appendText, appendThinking, chunkListBytes, clearChunks, type ChunkWindows } from './content-chunks.js';
import { TEXT_MEMBER_SET, Trail, walkChoice, walkDelta, walkTop } from './delta-trails.js';
import { oneContentAt, OneWayChunks } from './one-way-chunks.js';

export type ChunkModeration =
  | { blocked: true; category: string }
  /** `chunk` is undefined when nothing in it may be sent yet; `changed` when it is not the upstream's chunk as is. */
  | { blocked: false; chunk: ChatChunk | undefined; changed: boolean };

/**
 * An unparsed chunk moderated off its text: `raw` is what to send (the
 * upstream's text, or it with the content replaced), undefined when nothing
 * may be sent yet; `shown` is the UTF-8 bytes of text released in it and `seen`
 * those the upstream sent.
 */
export type PlainModeration =
  | { blocked: true; category: string }
  | { blocked: false; raw: string | undefined; shown: number; seen: number };

/**
 * A window's text: a delta's text member, a legacy function call's arguments,
 * a content list's thinking, the texts of thinking blocks (checked, never
 * released as text: the blocks themselves are held), or a tool call's
 * arguments (by its index).
 */
type Channel = (typeof TEXT_MEMBERS)[number] | 'function_call' | 'thinking' | 'thinking_blocks' | number;

const CONTENT_KEY = '"content":"';

class Blocked { constructor(readonly category: string) {} }

export class ChunkedOutput {
  /** Windows by choice index, then by channel (a number is a tool call index). */
  private readonly windows = new Map<number, Map<Channel, ChunkedModerator>>();
  /** Every other text's place, under its choice's index, each with a moderator that keeps its left context. */
  private readonly trails = new Trail<ChunkedModerator>();
  /** The chunks' own members beside their choices (citations, search results), by place. */
  private readonly topTrail = new Trail<ChunkedModerator>();
  /** Each choice's members beside its delta (walkChoice), under its index, by place. */
  private readonly choiceTrail = new Trail<ChunkedModerator>();
  /** What each choice said last, text, a call or thinking: where it changes, the windows of the kind it leaves are released (releaseLeft). */
  private readonly kinds = new Map<number, 'text' | 'call' | 'thinking'>();
  /** Choices whose content came last as a list of chunks, so what their content window releases at the end goes as one. */
  private readonly listed = new Set<number>();
  /** Choices whose thinking window may hold text: the answer's text, when it begins, releases it first. */
  private readonly thinkingOpen = new Set<number>();
  /** Choices whose reasoning windows (`reasoning_content`, `reasoning`) may hold text: what follows the thinking releases it first. */
  private readonly reasoningOpen = new Set<number>();
  /**
   * Thinking blocks by choice, held until the thinking is over (the choice's
   * next text, tool call or finish). A signed block cannot be split, so one
   * sent at once would show the first half of a match that the next block ends.
   */
  private readonly heldBlocks = new Map<number, unknown[]>();

  /** `choices`: the request's `n`; a chunk for another choice fails the stream (chunk-indexes.ts). */
  constructor(private readonly open: () => ChunkedModerator, private readonly choices?: number) {}

  push(chunk: ChatChunk): ChunkModeration {
    checkIndexes(chunk, this.choices);
    let changed = false;
    const choices: ChunkChoice[] = [];
    try {
      // A chunk with members of its own beside the choices goes out with them, its choices' held text aside.
      const others = walkTop(this.topTrail, chunk, (t, text, alone) => this.extend(t, text, alone));
      for (const c of chunk.choices) {
        // Sent as they came, as the chunk's own members are, once checked joined with what came before them.
        const own = walkChoice(this.choiceTrail.at(c.index), c, (t, text, alone) => this.extend(t, text, alone));
        let delta = this.clearDelta(c);
        if (delta.logprobs != null) delta = withoutLogprobs(delta === c.delta ? { ...delta } : delta);
        let out = delta === c.delta ? c : { ...c, delta };
        if (out.logprobs != null) out = withoutLogprobs(out === c ? { ...c } : out);
        if (out !== c) changed = true;
        if (!others && !own && isEmpty(out)) { changed = true; continue; }
        choices.push(out);
      }
    } catch (err) {
      if (err instanceof Blocked) return { blocked: true, category: err.category };
      throw err;
    }
    if (!changed && chunk.logprobs == null) return { blocked: false, chunk, changed: false };
    if (choices.length === 0 && chunk.choices.length > 0 && !chunk.usage) return { blocked: false, chunk: undefined, changed: true };
    const cleared = { ...chunk, choices };
    return { blocked: false, chunk: chunk.logprobs == null ? cleared : withoutLogprobs(cleared), changed: true };
  }

  /**
   * The same as push for a chunk's text whose choices start at `from` (after
   * its head, which names no reader text), when it has the one-content shape;
   * undefined otherwise, and the caller parses it.
   */
  pushPlain(raw: string, from: number): PlainModeration | undefined {
    // The one-content shape (one-way-chunks.ts): any other chunk is parsed. Its head is that of a
    // chunk that was parsed and pushed, and is checked to read one way once per head.
    const m = oneContentAt(raw, from);
    if (!m || !this.oneWay.headReadsOneWay(raw, from)) return undefined;
    // The first text after thinking releases that thinking with it (a content list's, held blocks): push does that.
    const choice = Number(m[1]);
    // A choice the request did not ask for is refused where chunks are parsed (checkIndexes).
    if (this.choices !== undefined && choice >= this.choices) return undefined;
    if ((this.thinkingOpen.size > 0 && this.thinkingOpen.has(choice)) || (this.heldBlocks.size > 0 && this.heldBlocks.has(choice))
      || (this.reasoningOpen.size > 0 && this.reasoningOpen.has(choice))) return undefined;
    // Text after a call releases the call's windows first, and after thinking the thinking's: push does that (releaseLeft).
    const kind = this.kinds.get(choice);
    if (kind === 'call' || kind === 'thinking') return undefined;
    const quoted = m[2]!;
    const text = quoted.includes('\\') ? JSON.parse(`"${quoted}"`) as string : quoted;
    if (text === '') return undefined;
    if (kind === undefined) this.kinds.set(choice, 'text');
    let released: string;
    try {
      released = this.step(choice, 'content', text);
    } catch (err) {
      if (err instanceof Blocked) return { blocked: true, category: err.category };
      throw err;
    }
    const seen = Buffer.byteLength(text);
    if (released === text) return { blocked: false, raw, shown: seen, seen };
    // An empty delta is nothing a reader would see: the chunk is held back whole, as push does.
    if (released === '') return { blocked: false, raw: undefined, shown: 0, seen };
    const start = raw.indexOf(CONTENT_KEY, from) + CONTENT_KEY.length - 1;
    return { blocked: false, raw: raw.slice(0, start) + JSON.stringify(released) + raw.slice(start + quoted.length + 2), shown: Buffer.byteLength(released), seen };
  }

  /** Whether plain chunks' heads repeat no key, each distinct head checked once. */
  private readonly oneWay = new OneWayChunks();

  private window(choice: number, channel: Channel): ChunkedModerator {
    let byChannel = this.windows.get(choice);
    if (!byChannel) this.windows.set(choice, (byChannel = new Map()));
    let w = byChannel.get(channel);
    if (!w) byChannel.set(channel, (w = this.open()));
    return w;
  }

  /** A text sent as it came, checked joined with what came before it in its place; a number (alone), by itself. */
  private extend(trail: Trail<ChunkedModerator>, text: string, alone = false): void {
    const w = alone ? this.open() : (trail.state ??= this.open());
    let s = w.push(text);
    if (!s.blocked) s = w.finish();
    if (s.blocked) throw new Blocked(s.category);
  }

  private step(choice: number, channel: Channel, text: string): string {
    const s = this.window(choice, channel).push(text);
    if (s.blocked) throw new Blocked(s.category);
    return s.release;
  }

  /** A content list's windows for one choice (content-chunks.ts). */
  private chunkWindows(choice: number): ChunkWindows {
    return {
      text: (piece) => this.step(choice, 'content', piece),
      thinking: (piece) => {
        this.thinkingOpen.add(choice);
        return this.step(choice, 'thinking', piece);
      },
      endThinking: () => this.endThinking(choice),
    };
  }

  private endThinking(choice: number): string {
    if (!this.thinkingOpen.delete(choice)) return '';
    const s = this.window(choice, 'thinking').finish();
    if (s.blocked) throw new Blocked(s.category);
    return s.release;
  }

  /** The delta with every text replaced by what its window released; the same object when nothing changed. */
  private clearDelta(c: ChunkChoice): Delta {
    const d = c.delta ?? {};
    let out: Delta | undefined;
    for (const key of TEXT_MEMBERS) {
      const text = d[key];
      if (typeof text !== 'string' || text === '') continue;
      // A plain text after a content list's thinking: that thinking's rest goes first, and the content becomes a list.
      const ended = key === 'content' ? this.endThinking(c.index) : '';
      if (key === 'reasoning_content' || key === 'reasoning') this.reasoningOpen.add(c.index);
      const released = this.step(c.index, key, text);
      if (ended) {
        const list: unknown[] = [];
        appendThinking(list, ended);
        if (released) appendText(list, released);
        (out ??= { ...d }).content = list as unknown as string;
      } else if (released !== text) {
        (out ??= { ...d })[key] = released;
      }
      // The upstream's content is a string again: so is what its window releases at the end.
      if (key === 'content') this.listed.delete(c.index);
    }
    let unread: Delta = d;
    if (Array.isArray(d.content)) {
      const cleared = clearChunks(d.content, this.chunkWindows(c.index));
      this.listed.add(c.index);
      unread = { ...d, content: cleared.unread as unknown as string };
      if (cleared.sent !== d.content) {
        out ??= { ...d };
        if (cleared.sent) out.content = cleared.sent as unknown as string;
        else delete out.content;
      }
    }
    if (d.thinking_blocks != null) {
      // Checked joined with the blocks before them, and held (heldBlocks).
      for (const text of shownTexts(d.thinking_blocks, [])) this.step(c.index, 'thinking_blocks', text);
      const held = this.heldBlocks.get(c.index);
      const blocks = Array.isArray(d.thinking_blocks) ? d.thinking_blocks : [d.thinking_blocks];
      if (held) held.push(...blocks);
      else this.heldBlocks.set(c.index, blocks.slice());
      delete (out ??= { ...d }).thinking_blocks;
    }
    walkDelta(this.trails.at(c.index), unread, (t, text, alone) => this.extend(t, text, alone));
    const fc = d.function_call;
    if (isObj(fc) && typeof fc.arguments === 'string' && fc.arguments !== '') {
      const released = this.step(c.index, 'function_call', fc.arguments);
      if (released !== fc.arguments) (out ??= { ...d }).function_call = { ...fc, arguments: released };
    }
    if (Array.isArray(d.tool_calls)) {
      let calls: ToolCallDelta[] | undefined;
      d.tool_calls.forEach((t, i) => {
        const args = t.function?.arguments;
        if (typeof args !== 'string' || args === '') return;
        const released = this.step(c.index, callIndex(t, i), args);
        if (released !== args) (calls ??= d.tool_calls!.slice())[i] = { ...t, function: { ...t.function, arguments: released } };
      });
      if (calls) (out ??= { ...d }).tool_calls = calls;
    }
    if (!c.finish_reason && (this.heldBlocks.has(c.index) || this.reasoningOpen.has(c.index)) && thinkingOver(d)) out = this.endReasoning(c.index, out ?? d, d);
    if (c.finish_reason) out = this.finishChoice(c.index, out ?? d, d);
    else out = this.releaseLeft(c.index, out ?? d, d);
    return out;
  }

  /**
   * The thinking is over (the delta begins the text, refusal or call that
   * follows it): what its reasoning windows hold, checked to their end, and
   * its held blocks go out in this delta, before what follows, where the model
   * wrote them. Held to the finish, the reasoning's tail came after the call,
   * and a Responses reader put it in a reasoning item of its own after the
   * call's (until 2026-11-29). The windows stay, as at a finish.
   */
  private endReasoning(index: number, delta: Delta, original: Delta): Delta {
    let out = delta === original ? { ...delta } : delta;
    if (this.reasoningOpen.delete(index)) {
      for (const channel of ['reasoning_content', 'reasoning'] as const) {
        const w = this.windows.get(index)?.get(channel);
        if (!w) continue;
        const s = w.finish();
        if (s.blocked) throw new Blocked(s.category);
        if (s.release) out = place(out, channel, s.release, false);
      }
    }
    const blocks = this.releaseBlocks(index);
    if (blocks) out.thinking_blocks = blocks;
    return out;
  }

  /** A choice's held thinking blocks, once the texts of all of them, joined, are checked to the end. */
  private releaseBlocks(choice: number): unknown[] | undefined {
    const held = this.heldBlocks.get(choice);
    if (!held) return undefined;
    this.heldBlocks.delete(choice);
    const s = this.window(choice, 'thinking_blocks').finish();
    if (s.blocked) throw new Blocked(s.category);
    return held;
  }

  /**
   * The stream ended: what every window still holds, released into one chunk
   * (undefined if nothing was held). A choice's windows are released at its
   * finish reason, and a stream that ends without one (an OpenAI-compatible
   * server may end with [DONE] alone) would otherwise never send the rest.
   */
  end(): ChunkModeration {
    const choices: ChunkChoice[] = [];
    try {
      for (const index of new Set([...this.windows.keys(), ...this.heldBlocks.keys()])) {
        const none: Delta = {};
        const delta = this.finishChoice(index, none, none);
        if (delta !== none) choices.push({ index, delta, finish_reason: null });
      }
    } catch (err) {
      if (err instanceof Blocked) return { blocked: true, category: err.category };
      throw err;
    }
    return { blocked: false, chunk: choices.length ? { choices } : undefined, changed: true };
  }

  /**
   * At a choice's finish reason: its windows release what they held, into this
   * chunk. They and its trails stay, with what they released as left context:
   * a client keeps joining a choice's pieces after its finish (the openai SDK
   * does), so an upstream that sent "make a " then a finish, or a usage chunk
   * (which releases every window), then "bomb", would otherwise have the
   * term's halves read in two windows (until 2026-11-29 they were).
   */
  private finishChoice(index: number, delta: Delta, original: Delta): Delta {
    const listed = this.listed.delete(index);
    this.thinkingOpen.delete(index);
    this.reasoningOpen.delete(index);
    let out = delta === original ? { ...delta } : delta;
    // Blocks whose texts are all unread (a redacted block) were held with no window.
    const blocks = this.releaseBlocks(index);
    if (blocks) out.thinking_blocks = blocks;
    let changed = blocks !== undefined;
    const byChannel = this.windows.get(index);
    if (!byChannel) return changed ? out : delta;
    // A content list's thinking goes before its text, as the model wrote them.
    const channels = [...byChannel].sort(([a], [b]) => Number(b === 'thinking') - Number(a === 'thinking'));
    for (const [channel, w] of channels) {
      const s = w.finish();
      if (s.blocked) throw new Blocked(s.category);
      if (!s.release || channel === 'thinking_blocks') continue;
      changed = true;
      out = place(out, channel, s.release, listed);
    }
    return changed ? out : delta;
  }

  /**
   * A choice that moves from one kind of part to another (text, a call,
   * thinking): what the windows of the kind it leaves still hold goes out in
   * this delta, checked to their end, where the model wrote it, before what
   * follows. Held to the finish, a call's last arguments came after the text
   * or the thinking that followed the call, and a Responses reader got them on
   * an item that text had closed (until 2026-11-29; after thinking, Claude's
   * interleaved thinking, the call's item kept its arguments cut short). The
   * thinking's own windows are released where it is over (endReasoning). The
   * windows stay, with what they released as left context, as at a finish.
   */
  private releaseLeft(index: number, delta: Delta, original: Delta): Delta {
    const text = saysText(original);
    const call = startsCall(original);
    if (text && call) return delta;
    const kind = text ? 'text' : call ? 'call' : saysThinking(original) ? 'thinking' : undefined;
    if (!kind) return delta;
    // Only where the kind changes: the windows left were released then, and are empty until it changes back.
    const was = this.kinds.get(index);
    this.kinds.set(index, kind);
    if (was === undefined || was === kind || was === 'thinking') return delta;
    const byChannel = this.windows.get(index);
    if (!byChannel) return delta;
    let out: Delta | undefined;
    for (const [channel, w] of byChannel) {
      const left = was === 'call' ? typeof channel === 'number' || channel === 'function_call' : channel === 'content' || channel === 'refusal';
      if (!left) continue;
      const s = w.finish();
      if (s.blocked) throw new Blocked(s.category);
      if (s.release) out = place(out ?? (delta === original ? { ...delta } : delta), channel, s.release, this.listed.has(index));
    }
    return out ?? delta;
  }
}

/** `release` put into the delta where its channel goes, after what the delta has there. */
function place(out: Delta, channel: Channel, release: string, listed: boolean): Delta {
  if (channel === 'function_call') {
    const fc = isObj(out.function_call) ? out.function_call : {};
    return { ...out, function_call: { ...fc, arguments: (typeof fc.arguments === 'string' ? fc.arguments : '') + release } };
  }
  if (channel === 'thinking' || (channel === 'content' && (Array.isArray(out.content) || (out.content == null && listed)))) {
    const had: unknown = out.content;
    const list = Array.isArray(had) ? had.slice() : typeof had === 'string' && had ? [{ type: 'text', text: had }] : [];
    (channel === 'thinking' ? appendThinking : appendText)(list, release);
    out.content = list as unknown as string;
    return out;
  }
  if (typeof channel === 'string') {
    out[channel] = (typeof out[channel] === 'string' ? out[channel] : '') + release;
    return out;
  }
  const calls = (out.tool_calls ?? []).slice();
  const at = calls.findIndex((t) => t.index === channel);
  if (at < 0) calls.push({ index: channel, function: { arguments: release } });
  else calls[at] = { ...calls[at]!, function: { ...calls[at]!.function, arguments: (calls[at]!.function?.arguments ?? '') + release } };
  return { ...out, tool_calls: calls };
}

/** The delta says text: a content or a refusal. */
function saysText(d: Delta): boolean {
  return (typeof d.content === 'string' && d.content !== '') || (typeof d.refusal === 'string' && d.refusal !== '');
}

/** The delta carries a call: a tool call or a legacy function call. */
function startsCall(d: Delta): boolean {
  return (Array.isArray(d.tool_calls) && d.tool_calls.length > 0) || isObj(d.function_call);
}

/** The delta carries thinking: its text, or signed blocks. */
function saysThinking(d: Delta): boolean {
  return (typeof d.reasoning_content === 'string' && d.reasoning_content !== '') || (typeof d.reasoning === 'string' && d.reasoning !== '') || d.thinking_blocks != null;
}

/** The delta begins what follows a choice's thinking: its text, a refusal or a call. */
function thinkingOver(d: Delta): boolean {
  return (typeof d.content === 'string' && d.content !== '') || (Array.isArray(d.content) && d.content.some((i) => isObj(i) && i.type === 'text'))
    || (typeof d.refusal === 'string' && d.refusal !== '') || (Array.isArray(d.tool_calls) && d.tool_calls.length > 0) || d.function_call != null;
}

/**
 * The object without its `logprobs` (it is a copy). Per-token log probabilities
 * spell the text a window still holds back, token by token: "To make a bo" as
 * tokens while the window released only "To ". A chunked stream cannot be
 * asked for them (chat-completions.ts), so an upstream that sends them anyway
 * has them dropped, on a choice (where OpenAI puts them), its delta, or the
 * chunk itself (until 2026-11-29 they went out at once).
 */
function withoutLogprobs<T extends Record<string, unknown>>(o: T): T {
  delete o.logprobs;
  return o;
}

/** Nothing a reader would see: no role, no text, no tool call, no finish. */
function isEmpty(c: ChunkChoice): boolean {
  if (c.finish_reason) return false;
  for (const k in c.delta) {
    const v = c.delta[k];
    // An empty string says nothing; a content that is a list of chunks does.
    if (typeof v === 'string' && TEXT_MEMBER_SET.has(k) ? v !== '' : v !== undefined && v !== null) return false;
  }
  return true;
}

/** UTF-8 bytes of output text in a chunk: what a reader has been shown (the trace's disclosed_bytes). */
export function disclosedBytes(chunk: ChatChunk): number {
  let n = 0;
  for (const c of chunk.choices) {
    const d = c.delta;
    if (!d) continue;
    for (const k of TEXT_MEMBERS) {
      const v = d[k];
      if (typeof v === 'string') n += Buffer.byteLength(v);
    }
    if (Array.isArray(d.content)) n += chunkListBytes(d.content);
    if (isObj(d.function_call) && typeof d.function_call.arguments === 'string') n += Buffer.byteLength(d.function_call.arguments);
    if (Array.isArray(d.tool_calls)) for (const t of d.tool_calls) if (typeof t?.function?.arguments === 'string') n += Buffer.byteLength(t.function.arguments);
  }
  return n;
}
