// Serialises chat.completion.chunk lines. An upstream chunk that policy did
// not change is written back as the upstream's own text with only `id` and
// `model` spliced in: no second JSON.stringify, and every field, known or not,
// byte for byte. Chunks a translator built, or moderation changed, are
// serialised with the stream's id, object, created and model first.
import type { ChatChunk, PlainHead, Usage } from '../domain.js';
import { flatCopy } from '../flat-copy.js';

export class ChunkWriter {
  private readonly id: string;
  private readonly model: string;
  /** Built on first use: a stream of unparsed upstream chunks needs it at most once, for its tail. */
  private headText: string | undefined;
  /** The upstream's last id/model and their JSON keys: one stream repeats the same values, so they are built once. */
  private seenId: unknown;
  private seenModel: unknown;
  private idKey = '';
  private modelKey = '';
  /** The same keys with any JSON whitespace around the colon, built only for a stream that spaces them. */
  private idSpaced: RegExp | undefined;
  private modelSpaced: RegExp | undefined;

  constructor(private readonly idValue: string, private readonly modelValue: string, private readonly created: number) {
    this.id = JSON.stringify(idValue);
    this.model = JSON.stringify(modelValue);
  }

  private get head(): string {
    // Flat, as the plain line start: a translated stream (Anthropic, Gemini) writes it in every line.
    this.headText ??= flatCopy(`{"id":${this.id},"object":"chat.completion.chunk","created":${this.created},"model":${this.model}`);
    return this.headText;
  }

  /** One `data:` line for `chunk`; `raw` is the upstream's text of it, when unchanged, and `head` what it begins with, when known. */
  line(chunk: ChatChunk, raw: string | undefined, head?: PlainHead): string {
    const swapped = raw !== undefined && head ? this.headSwapped(raw, head) : undefined;
    if (swapped !== undefined) return swapped;
    const spliced = raw === undefined || typeof chunk.id !== 'string' || typeof chunk.model !== 'string' ? undefined : this.splice(raw, chunk.id, chunk.model);
    return `data: ${spliced ?? this.serialise(chunk)}\n\n`;
  }

  /** The upstream head last seen, and `data: ` with the same head carrying the gateway's id and model. */
  private upstreamHead = '';
  private ownLine: string | undefined;

  /** The line for `raw`, which begins with `head`: the gateway's line start, then the rest; undefined if the head cannot be spliced. */
  private headSwapped(raw: string, head: PlainHead): string | undefined {
    if (head.prefix !== this.upstreamHead) {
      this.upstreamHead = head.prefix;
      const own = this.splice(head.prefix, head.id, head.model);
      // Flat: it starts every line of the stream, and the splice is a tree of seven parts that
      // the output's flattening walked again in every line (6 % of a 20-chunk stream's instructions).
      this.ownLine = own === undefined ? undefined : flatCopy(`data: ${own}`);
    }
    return this.ownLine === undefined ? undefined : `${this.ownLine}${raw.slice(head.prefix.length)}\n\n`;
  }

  /** One `data:` line for an unparsed chunk: its head swapped for the gateway's, the rest as the upstream wrote it. */
  plainLine(ev: { raw?: string; readonly chunk: ChatChunk; plain?: PlainHead }): string {
    const swapped = ev.raw !== undefined && ev.plain ? this.headSwapped(ev.raw, ev.plain) : undefined;
    // Not line(ev.chunk, …) first: reading `chunk` parses an unparsed chunk.
    return swapped ?? this.line(ev.chunk, ev.raw);
  }

  /**
   * The raw text with the upstream's `"id":"…"` and `"model":"…"` replaced.
   * Inside a JSON string every quote is escaped, so `"id":"<value>"` can only
   * be a key; the first match is the chunk's own (nested ids, such as a tool
   * call's, carry other values). Undefined when the text is not in the compact
   * form this expects, and the chunk is then serialised instead.
   */
  private splice(raw: string, id: string, model: string): string | undefined {
    if (id !== this.seenId) { this.seenId = id; this.idKey = `"id":${JSON.stringify(id)}`; this.idSpaced = undefined; }
    if (model !== this.seenModel) { this.seenModel = model; this.modelKey = `"model":${JSON.stringify(model)}`; this.modelSpaced = undefined; }
    let i = raw.indexOf(this.idKey);
    let idLen = this.idKey.length;
    let j = raw.indexOf(this.modelKey);
    let modelLen = this.modelKey.length;
    // Spaced JSON (`"id": "…"`, Python's json.dumps default) is found the slow way, so its
    // chunks keep their own text too (a `1.0` would come back `1` from JSON.stringify).
    if (i < 0) [i, idLen] = spacedAt(raw, this.idSpaced ??= spacedKey('id', id));
    if (j < 0) [j, modelLen] = spacedAt(raw, this.modelSpaced ??= spacedKey('model', model));
    if (i < 0 || j < 0) return undefined;
    const [first, firstLen, firstVal, second, secondLen, secondVal] = i < j
      ? [i, idLen, `"id":${this.id}`, j, modelLen, `"model":${this.model}`]
      : [j, modelLen, `"model":${this.model}`, i, idLen, `"id":${this.id}`];
    return raw.slice(0, first) + firstVal + raw.slice(first + firstLen, second) + secondVal + raw.slice(second + secondLen);
  }


  private serialise(chunk: ChatChunk): string {
    // An upstream chunk (it has an id) keeps its key order and its own created; a translator's gets the stream's head.
    if (typeof chunk.id === 'string') {
      return JSON.stringify({ ...chunk, id: this.idValue, model: this.modelValue });
    }
    // A chunk that names its own object, created or model but no id (some servers omit it) keeps
    // those values but not twice: the head's keys written again after it would leave duplicate
    // keys, and a reader's last-wins would take the upstream's model over the gateway's.
    if ('object' in chunk || 'created' in chunk || 'model' in chunk) {
      // The head's keys first, in their places; the chunk's own values for object and created.
      const out = { id: this.idValue, object: 'chat.completion.chunk', created: this.created, model: this.modelValue, ...chunk };
      out.id = this.idValue;
      out.model = this.modelValue;
      return JSON.stringify(out);
    }
    const body = JSON.stringify(chunk);
    return body === '{}' ? `${this.head}}` : `${this.head},${body.slice(1)}`;
  }

  /** A chunk with empty choices: carries usage, and the gateway block when asked for. */
  tail(usage: Usage, gateway?: Record<string, unknown>): string {
    const g = gateway ? `,"gateway":${JSON.stringify(gateway)}` : '';
    return `data: ${this.head},"choices":[],"usage":${JSON.stringify(usage)}${g}}\n\n`;
  }
}

/** `"key" : "value"` with any JSON whitespace around the colon, for that one value. */
function spacedKey(key: string, value: string): RegExp {
  return new RegExp(`"${key}"[ \\t\\r\\n]*:[ \\t\\r\\n]*${JSON.stringify(value).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`);
}

/** Where the first match starts, and its length; -1 when there is none. */
function spacedAt(raw: string, key: RegExp): [number, number] {
  const m = key.exec(raw);
  return m ? [m.index, m[0].length] : [-1, 0];
}

export const DONE = 'data: [DONE]\n\n';
