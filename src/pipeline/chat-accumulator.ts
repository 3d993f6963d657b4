// Folds a stream's chunks into the completion they add up to, choice by
// choice: content, refusal, reasoning, tool calls merged by index, finish
// reasons, and the upstream's usage. Buffered moderation reads it, the trace
// takes its usage (or an estimate from its text), and the payload archive
// stores it as the response, so every other member is kept too, known or
// not: a delta's (annotations) and a tool call's (extra_content) folded as a
// client folds them, a choice's logprobs token by token, and the members each
// chunk repeats whole (system_fingerprint, service_tier) as the last had them.
import { TEXT_MEMBERS, type AssistantMessage, type ChatChunk, type ChatCompletion, type Choice, type ChunkChoice, type ToolCall, type ToolCallDelta, type Usage } from '../domain.js';
import { chargeable } from '../providers/openai-compatible/response.js';
import { isObj } from '../responses/types.js';
import { shownTexts } from '../policy/shown-texts.js';
import { callIndex, checkIndexes } from './chunk-indexes.js';
import { TEXT_MEMBER_SET, Trail, walkChoice, walkDelta, walkTop } from './delta-trails.js';

export class StreamAccumulator {
  /** Made on the first chunk folded in: a skimmed stream never needs it, and an empty Map holds a table of its own for the stream's life. */
  private choices: Map<number, Choice> | undefined;
  /** Output characters of skimmed chunks, for a usage estimate should the upstream never report usage. */
  private skimmedChars = 0;
  /** The last usage the upstream reported that can be charged (OpenAI sends it once, on the final chunk). */
  usage: Usage | undefined;
  /** Each choice's streamed audio, its base64 pieces in order (joined in `completion`). */
  private audioData: Map<number, string[]> | undefined;
  /** A piece came since `completion` last joined them: moderation and the archive each read it. */
  private audioPending = false;
  /**
   * Each choice's other texts (under its index) joined as they streamed, by place
   * (delta-trails.ts), for buffered moderation: the completion keeps such a
   * member as a client folds it, which may be its last piece alone.
   */
  private readonly trails: Trail<string> | undefined;
  private topTrail: Trail<string> | undefined;
  /** Each choice's members beside its delta, joined by place (walkChoice), for buffered moderation. */
  private choiceTrail: Trail<string> | undefined;

  /** `moderated`: buffered moderation reads this stream (trailTexts); `asked`, the request's `n`, bounds its choice indexes then. */
  constructor(moderated = false, private readonly asked?: number) {
    if (moderated) this.trails = new Trail();
  }

  /**
   * For a stream nobody reads the text of: usage is taken, and otherwise only
   * the size of the output is counted (`outputBytes`, read off an unparsed
   * chunk's text by the caller), so a stream of any length costs the same
   * memory. Callers that read the text (moderation, the payload archive) `add`
   * every chunk instead.
   */
  skim(ev: { readonly chunk: ChatChunk; plain?: unknown; usage?: Usage }, outputBytes: number): void {
    const usage = ev.plain ? ev.usage : ev.chunk.usage;
    if (chargeable(usage)) this.usage = usage;
    this.skimmedChars += outputBytes;
  }

  /** Output characters seen, for an estimate: skimmed or folded in. */
  get outputChars(): number {
    return this.skimmedChars + outputChars(this.completion);
  }

  /** Whether the upstream made anything of the answer: a usage, or output (seen by the caller or not). */
  get madeOutput(): boolean {
    return this.usage !== undefined || this.outputChars > 0;
  }

  /**
   * The stream as a client reads it that takes each chunk's first choice,
   * whatever its index, and its reasoning from `reasoning_content`, else
   * `reasoning` (LangChain's ChatOpenAI does both), or the other way round.
   * Buffered moderation reads it where it differs from the reading by index
   * and member: "make a " in choice 0 and "bomb" in choice 1, or in
   * `reasoning_content` then `reasoning`, passed moderation and reached such
   * a client as one text (until 2026-11-29).
   */
  private first: { index: number; differs: boolean; content: string; both: number; reasoning: string; reasoningAlt: string; args: Map<number, string> } | undefined;

  private readFirst(chunk: ChatChunk): void {
    const c = chunk.choices[0];
    const d = c?.delta;
    if (!isObj(d)) return;
    const r = (this.first ??= { index: c!.index, differs: false, content: '', both: 0, reasoning: '', reasoningAlt: '', args: new Map() });
    if (c!.index !== r.index) r.differs = true;
    if (typeof d.content === 'string') r.content += d.content;
    // Such clients merge a call's pieces by the call's index, whatever the choice.
    if (Array.isArray(d.tool_calls)) {
      d.tool_calls.forEach((t, i) => {
        const a = isObj(t) && isObj(t.function) ? t.function.arguments : undefined;
        if (typeof a !== 'string' || !a) return;
        const k = callIndex(t, i);
        r.args.set(k, (r.args.get(k) ?? '') + a);
      });
    }
    const rc = typeof d.reasoning_content === 'string' ? d.reasoning_content : '';
    const rr = typeof d.reasoning === 'string' ? d.reasoning : '';
    if (rc) r.both |= 1;
    if (rr) r.both |= 2;
    r.reasoning += rc || rr;
    r.reasoningAlt += rr || rc;
  }

  /** The first-choice reading's texts where it differs from the others (readFirst). */
  firstChoiceTexts(): string[] {
    const r = this.first;
    if (!r) return [];
    const out = r.differs ? [r.content, ...r.args.values()] : [];
    if (r.differs || r.both === 3) out.push(r.reasoning, r.reasoningAlt);
    return out;
  }

  add(chunk: ChatChunk): void {
    // Moderation must join pieces where clients will (chunk-indexes.ts).
    if (this.trails) checkIndexes(chunk, this.asked);
    if (this.trails) this.readFirst(chunk);
    if (chargeable(chunk.usage)) this.usage = chunk.usage;
    const choices = (this.choices ??= new Map());
    for (const c of chunk.choices) {
      let choice = choices.get(c.index);
      if (!choice) {
        choice = { index: c.index, message: { role: 'assistant', content: null }, finish_reason: null };
        choices.set(c.index, choice);
      }
      if (c.delta) this.foldDelta(c.index, choice.message, c.delta);
      // A `message` beside a streamed choice's delta: set in place of what streamed (`message: {}`),
      // it wiped the text buffered moderation reads (until 2026-11-29). It is the answer only when no
      // delta said anything; else a repeat of it, which walkChoice has moderation read below.
      const repeated = (c as Record<string, unknown>).message;
      if (isObj(repeated) && saidNothing(choice.message)) this.foldDelta(c.index, choice.message, repeated as ChunkChoice['delta']);
      if (c.finish_reason) choice.finish_reason = c.finish_reason;
      // Log probabilities come token by token; a choice's other members are repeated whole, as a chunk's are.
      for (const k of Object.keys(c)) if (!CHOICE_FOLDED.has(k)) (k === 'logprobs' ? fold : replace)(choice, k, c[k]);
      // ...and are read joined by place, as a delta's other members are: each repeat may say something new.
      if (this.trails) walkChoice((this.choiceTrail ??= new Trail()).at(c.index), c, join);
    }
    for (const k of Object.keys(chunk)) if (k !== 'choices' && k !== 'usage') replace((this.top ??= {}), k, chunk[k]);
    if (this.trails) walkTop((this.topTrail ??= new Trail()), chunk, join);
  }

  /** A delta's members folded into its choice's message, and read by place for buffered moderation. */
  private foldDelta(index: number, m: AssistantMessage, d: ChunkChoice['delta']): void {
    if (this.trails) walkDelta(this.trails.at(index), d, join);
    if (Array.isArray(d.tool_calls)) d.tool_calls.forEach((t, i) => { if (isObj(t)) mergeToolCall(m, t, callIndex(t, i)); });
    // Signed thinking (Anthropic) arrives whole in one delta; the payload archive keeps it to replay a tool loop.
    // A block sent bare (not in a list) is a block too: walkDelta leaves blocks to this, so nothing else reads it.
    if (d.thinking_blocks != null) ((m.thinking_blocks ??= []) as unknown[]).push(...(Array.isArray(d.thinking_blocks) ? d.thinking_blocks : [d.thinking_blocks]));
    if (isObj(d.audio)) this.foldAudio(index, m, d.audio);
    else if (d.audio !== undefined) fold(m, 'audio', d.audio);
    for (const k of Object.keys(d)) if (!DELTA_OWN.has(k)) fold(m, k, d[k]);
  }

  /**
   * An audio delta's members folded into the message's audio, but for its
   * `data`: each chunk's is a base64 text of its own, padded to itself, so
   * joining the texts as text pieces would not be the sound, and keeping the
   * last (as a member every chunk repeats) kept a fraction of a second of it.
   */
  private foldAudio(index: number, m: AssistantMessage, audio: Record<string, unknown>): void {
    const had = Object.hasOwn(m, 'audio') ? (m as Record<string, unknown>).audio : undefined;
    const target: Record<string, unknown> = isObj(had) ? had : {};
    if (target !== had) define(m as Record<string, unknown>, 'audio', target);
    for (const k of Object.keys(audio)) {
      const v = audio[k];
      if (k !== 'data' || typeof v !== 'string') { fold(target, k, v); continue; }
      const all = (this.audioData ??= new Map());
      this.audioPending = true;
      const pieces = all.get(index);
      if (pieces) pieces.push(v);
      else {
        all.set(index, [v]);
        // Where the first piece came, so the member keeps its place among the others.
        define(target, 'data', v);
      }
    }
  }

  /** A choice's texts that streamed outside its text members and call arguments, each joined by place; then its own members'. */
  trailTexts(index: number): string[] {
    const out = this.trails?.at(index).states() ?? [];
    if (this.choiceTrail) out.push(...this.choiceTrail.at(index).states());
    return out;
  }

  /** The same for the chunks' own members beside their choices (walkTop). */
  topTrailTexts(): string[] {
    return this.topTrail?.states() ?? [];
  }

  /** The chunks' own members besides choices and usage (id, model, system_fingerprint...), the last of each. */
  private top: Record<string, unknown> | undefined;

  get completion(): ChatCompletion {
    const choices = this.choices ? [...this.choices.values()].sort((a, b) => a.index - b.index) : [];
    if (this.audioPending) {
      this.audioPending = false;
      for (const [index, pieces] of this.audioData!) {
        const audio = (this.choices!.get(index)!.message as Record<string, unknown>).audio;
        if (isObj(audio)) audio.data = joinBase64(pieces);
      }
    }
    const out: ChatCompletion = { ...this.top, choices };
    if (out.object === 'chat.completion.chunk') out.object = 'chat.completion';
    if (this.usage) out.usage = this.usage;
    return out;
  }
}

/** A trail's text so far, joined with the piece that came. */
// A number is read apart from the pieces around it: a newline is never inside a match a term makes, nor in a digit run.
const join = (t: Trail<string>, text: string, alone: boolean): void => {
  t.state = alone && t.state ? `${t.state}\n${text}` : (t.state ?? '') + text;
};

/** A delta's members add() reads itself; the rest are folded (its text members joined as TEXT_KEYS says). */
const DELTA_OWN = new Set(['tool_calls', 'thinking_blocks', 'audio']);
/** A streamed choice's members add() reads itself; the rest are kept as a chunk's are. */
const CHOICE_FOLDED = new Set(['index', 'delta', 'message', 'finish_reason']);
const CALL_OWN = new Set(['index', 'id', 'function']);
/** Strings that come in pieces, as content does; any other string (an id, a type) is replaced by the last. */
const TEXT_KEYS = new Set([...TEXT_MEMBERS, 'arguments', 'text', 'transcript']);

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Streamed base64 pieces as one base64 text of all their bytes, as a
 * non-streamed answer carries its sound. Pieces that are not all strict
 * base64 are joined as they came: decoding them would silently drop what is
 * not base64.
 */
function joinBase64(pieces: string[]): string {
  if (pieces.length === 1 || !pieces.every((p) => BASE64.test(p))) return pieces.join('');
  return Buffer.concat(pieces.map((p) => Buffer.from(p, 'base64'))).toString('base64');
}

/**
 * Sets an own member, whatever its name: an assignment to "__proto__" would
 * set the prototype instead. Only that name pays for defineProperty, which
 * buffered moderation would otherwise run for every member of every chunk.
 */
function define(into: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(into, key, { value, writable: true, enumerable: true, configurable: true });
  else into[key] = value;
}

/** A member every chunk repeats whole (an id, system_fingerprint): the last stands, and a null leaves an earlier value. */
function replace(into: Record<string, unknown>, key: string, value: unknown): void {
  if (value !== null || !Object.hasOwn(into, key)) define(into, key, value);
}

/**
 * Folds a streamed member into what came before, as a client folds deltas:
 * arrays are appended (logprobs.content, annotations), objects folded member
 * by member, text pieces joined, and anything else replaced by the last; a
 * null leaves an earlier value. Arrays and objects folded into are the
 * accumulator's own copies, never a chunk's.
 */
function fold(into: Record<string, unknown>, key: string, value: unknown): void {
  const had = Object.hasOwn(into, key) ? into[key] : undefined;
  if (TEXT_MEMBER_SET.has(key) && foldMixedText(into, key, had, value)) return;
  if (Array.isArray(value)) {
    if (Array.isArray(had)) had.push(...value);
    else define(into, key, [...value]);
  } else if (isObj(value)) {
    let target: Record<string, unknown>;
    if (isObj(had)) target = had;
    else define(into, key, (target = {}));
    for (const k of Object.keys(value)) fold(target, k, value[k]);
  } else if (typeof value === 'string' && typeof had === 'string' && TEXT_KEYS.has(key)) {
    define(into, key, had + value);
  } else if (value !== null || had === undefined) {
    define(into, key, value);
  }
}

/**
 * A text member that streamed as text and as something else (a list of parts,
 * an object): every piece is kept, as a content list (Mistral's shape) with
 * the text as a text part. Folded as other members are, the later value took
 * the text's place, and buffered moderation, which reads the folded message,
 * never read the text a client had been shown (until 2026-11-29).
 */
function foldMixedText(into: Record<string, unknown>, key: string, had: unknown, value: unknown): boolean {
  if (value === null || value === undefined) return false;
  const asList = (v: unknown): unknown[] => (Array.isArray(v) ? v : typeof v === 'string' ? (v === '' ? [] : [{ type: 'text', text: v }]) : [v]);
  const mixed = (typeof had === 'string' && had !== '' && typeof value !== 'string')
    || (isObj(had) && !isObj(value))
    || (Array.isArray(had) && !Array.isArray(value));
  if (!mixed) return false;
  const list = Array.isArray(had) ? had : asList(had);
  if (list !== had) define(into, key, list);
  // A string piece goes on the text part it follows: the token after it may end the same word.
  const last = list.at(-1);
  // A copy: the part may be the chunk's own object, which buffered moderation replays to the caller.
  if (typeof value === 'string' && isObj(last) && last.type === 'text' && typeof last.text === 'string') list[list.length - 1] = { ...last, text: last.text + value };
  else list.push(...asList(value));
  return true;
}

function mergeToolCall(m: AssistantMessage, t: ToolCallDelta, index: number): void {
  const calls = (m.tool_calls ??= []);
  let call: ToolCall | undefined = calls[index];
  if (!call) {
    call = { id: '', type: 'function', function: { name: '', arguments: '' } };
    calls[index] = call;
  }
  if (t.id) call.id = t.id;
  if (t.function?.name) call.function.name += t.function.name;
  if (t.function?.arguments) call.function.arguments += t.function.arguments;
  for (const k of Object.keys(t)) if (!CALL_OWN.has(k)) fold(call, k, t[k]);
  if (t.function) for (const k of Object.keys(t.function)) if (k !== 'name' && k !== 'arguments') fold(call.function, k, (t.function as Record<string, unknown>)[k]);
}

/** Whether no delta has said anything in this message yet: no text, no call. */
function saidNothing(m: AssistantMessage): boolean {
  return outputTexts(m).length === 0 && !(Array.isArray(m.tool_calls) && m.tool_calls.length > 0);
}

/** A choice's output text, for an estimate of its tokens: content, refusal, reasoning and every tool call's arguments. */
export function outputTexts(message: AssistantMessage): string[] {
  const out: string[] = [];
  // A member that streamed as text and as a list holds both as a list (foldMixedText).
  for (const k of TEXT_MEMBERS) {
    const v = message[k];
    if (typeof v === 'string') { if (v) out.push(v); } else if (Array.isArray(v)) shownTexts(v, out);
  }
  if (Array.isArray(message.tool_calls)) {
    for (const t of message.tool_calls) if (typeof t?.function?.arguments === 'string' && t.function.arguments) out.push(t.function.arguments);
  }
  return out;
}

/**
 * What moderation reads of a choice: every string of its message a reader is
 * shown, known or not (shown-texts.ts): content, refusal, reasoning, thinking
 * blocks' text, tool-call and legacy function-call arguments, an audio
 * answer's transcript (no rule reads the sound itself), annotations. The
 * thinking blocks' texts are read joined as well, as one run of thinking: a
 * match one block begins and the next ends is a match (chunked moderation
 * holds blocks back for the same reason).
 */
export function moderatedTexts(message: AssistantMessage): string[] {
  const out = shownTexts(message, []);
  // A text member that streamed in mixed shapes is a list (foldMixedText): read as one text too, as it was shown.
  for (const k of TEXT_MEMBERS) {
    const v = message[k];
    if (Array.isArray(v) && v.length > 1) out.push(shownTexts(v, []).join(''));
  }
  const blocks = message.thinking_blocks;
  if (Array.isArray(blocks) && blocks.length > 1) out.push(shownTexts(blocks, []).join(''));
  return out;
}

/** Characters of output across all choices, for a usage estimate when the upstream reported none. */
export function outputChars(completion: ChatCompletion): number {
  let n = 0;
  for (const c of completion.choices) if (c?.message) for (const t of outputTexts(c.message)) n += t.length;
  return n;
}
