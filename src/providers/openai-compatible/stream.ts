// OpenAI chat.completion.chunk lines: already the gateway's model, so the
// pipeline forwards each as the upstream's own text with only id and model
// replaced. Most chunks carry nothing but a delta behind the same head (id,
// object, created, model, fingerprint...) as the stream's first; such a chunk
// is not parsed here at all (JSON.parse was a tenth of the stream path's CPU):
// it is handed on as `plain`, parsed later only if policy or the payload
// archive reads it. So is a chunk that finishes a choice, marked `finishes`,
// and the usage chunk, whose usage object alone is parsed. Chunks that carry
// an error, or whose head differs, are always parsed.
import type { ChatChunk, PlainHead, StreamEvent, StreamTranslator, Usage } from '../../domain.js';
import { inBandErrorEvent } from '../in-band-error.js';
import { isObj } from '../json-shape.js';
import { errorDetails } from './errors.js';
import { flatCopy } from '../../flat-copy.js';
import { TailReader } from './chunk-tail.js';
import { choicesReadable } from './response.js';

/** A chunk whose object is parsed on first read. */
class PlainChunk {
  readonly type = 'chunk' as const;
  private parsed: ChatChunk | undefined;
  constructor(readonly raw: string, readonly plain: PlainHead, readonly outputBytes: number, readonly finishes: boolean, readonly usage: Usage | undefined) {}
  get chunk(): ChatChunk {
    this.parsed ??= JSON.parse(this.raw) as ChatChunk;
    return this.parsed;
  }
}

const CHOICES = '"choices":[';

const MALFORMED = Symbol('malformed');

/** The usage object the tail reader found, parsed alone: a tenth of the chunk. MALFORMED when it is not JSON, and the chunk is then parsed whole (and refused). */
function usageOf(data: string, tails: TailReader): Usage | undefined | typeof MALFORMED {
  if (tails.usageFrom < 0) return undefined;
  try {
    return JSON.parse(data.slice(tails.usageFrom, tails.usageTo)) as Usage;
  } catch {
    return MALFORMED;
  }
}

/** The head of a parsed chunk's text, when it is compact and holds id and model before the choices. */
function headOf(data: string, id: string, model: string, last: PlainHead | undefined): PlainHead | undefined {
  // The finish and usage chunks nearly always repeat the head: one compare instead of a search.
  if (last && last.id === id && last.model === model && data.slice(0, last.prefix.length) === last.prefix) return last;
  const at = data.indexOf(CHOICES);
  if (at < 0) return undefined;
  const prefix = data.slice(0, at + CHOICES.length);
  if (!prefix.startsWith(`{"id":${JSON.stringify(id)}`) || !prefix.includes(`"model":${JSON.stringify(model)}`)) return undefined;
  // Not the slice itself: a stream keeps its head for its whole life, and a slice would keep the
  // stream's first chunk, a large first delta included, for as long as the stream ran.
  return { prefix: flatCopy(prefix), id, model };
}

export function streamTranslator(): StreamTranslator {
  let head: PlainHead | undefined;
  const tails = new TailReader();
  return {
    event(_name, data): StreamEvent[] {
      if (data === '[DONE]') return [{ type: 'done' }];
      // An event sent over several `data:` lines arrives joined by line breaks (JSON whitespace, or
      // a malformed chunk inside a string). Its text, relayed as written, would end the client's
      // data line early and break its parse: such a chunk is parsed, and written from the parse.
      const multiLine = data.includes('\n');
      if (head && !multiLine) {
        const bytes = tails.bytes(data, head.prefix);
        if (bytes >= 0) {
          const usage = usageOf(data, tails);
          if (usage !== MALFORMED) return [new PlainChunk(data, head, bytes, tails.finished, usage)];
        }
      }
      let chunk: unknown;
      try { chunk = JSON.parse(data); } catch { return [{ type: 'error', message: 'The upstream sent a malformed stream chunk.' }]; }
      // An array is no chunk: written behind the gateway's head, `[1,2]` would end as `…"model":"m",1,2]`.
      if (!isObj(chunk) || Array.isArray(chunk)) return [{ type: 'error', message: 'The upstream sent a malformed stream chunk.' }];
      if (chunk.error) return inBandErrorEvent(chunk.error, data, errorDetails);
      // The head this chunk's text begins with, when it has one: its line is then written as a plain
      // chunk's is, without searching the text for its id and model.
      let begins: PlainHead | undefined;
      if (typeof chunk.id === 'string' && typeof chunk.model === 'string' && Array.isArray(chunk.choices)) {
        begins = headOf(data, chunk.id, chunk.model, head);
        head = begins ?? head;
      }
      // A chunk without choices (a bare usage chunk from some servers) is still passed on.
      if (!Array.isArray(chunk.choices)) chunk.choices = [];
      else if (!choicesReadable(chunk.choices)) return [{ type: 'error', message: 'The upstream sent a stream chunk whose choices, deltas or tool calls are not objects.' }];
      if (multiLine) return [{ type: 'chunk', chunk: chunk as ChatChunk }];
      return [{ type: 'chunk', chunk: chunk as ChatChunk, raw: data, head: begins }];
    },
  };
}
