// Gemini streamGenerateContent?alt=sse chunks -> OpenAI chat.completion.chunk events.
//
// Every chunk is a whole GenerateContentResponse holding one or more
// candidates, and there is no terminator event: a candidate is over at the
// chunk carrying its `finishReason`, and the stream when the body ends. Only
// then is it known that no candidate is still to come (with n > 1 one may first
// appear after another's finish) and which usage is the last (Gemini may send
// `usageMetadata` in a chunk of its own after the finish reasons), so the usage
// chunk and `done` go out at the end, if every candidate seen finished. A
// stream that ends without `done` was cut short. Gemini sends each function call whole, so
// a call is one tool_calls delta. A failure mid-stream is a chunk holding
// `{error: {code, message, status}}`.
import type { ChatChunk, ChunkChoice, Delta, StreamEvent, StreamTranslator, ToolCallDelta } from '../../domain.js';
import { GatewayError } from '../../errors.js';
import { inBandErrorEvent } from '../in-band-error.js';
import { isObj } from '../json-shape.js';
import { errorDetails } from './errors.js';
import { isSpace, stringEnd } from '../json-scan.js';
import { finishReason, readParts, toolCall, toolCallId } from './candidates.js';
import { readUsage } from './usage.js';

// Shared by every call that emits nothing; frozen so that a consumer mutating it fails loudly.
const NOTHING = Object.freeze([]) as unknown as StreamEvent[];


/**
 * The text of a plain mid-stream chunk, cut straight out of the raw JSON, or
 * undefined when the chunk needs a full parse. JSON.parse of a whole chunk
 * (usage, model version, ids) costs about 2 µs, the translator's whole budget.
 *
 * The fast path takes only a chunk of candidate 0 alone whose parts are
 * `[{"text": "…"}]` (no thought, no signature, no part before or after it) and
 * that has no `finishReason`.
 * Keys are matched with a quote, which answer text cannot produce: inside a
 * JSON string every quote is escaped. Error and
 * blocked-prompt chunks have no text part, so they always take the full parse.
 */
export function midStreamText(data: string): string | undefined {
  const key = data.indexOf('"text"');
  if (key < 0 || data.indexOf('finishReason"') >= 0) return undefined;
  // One candidate (one `content` key), candidate 0, and no call whose arguments could hold a `{"text": …}` of their own.
  const content = data.indexOf('"content"');
  if (content < 0 || content !== data.lastIndexOf('"content"') || data.indexOf('"functionCall"') >= 0) return undefined;
  const index = data.indexOf('"index"');
  if (index >= 0 && !/^"index"\s*:\s*0\s*[,}]/.test(data.slice(index, index + 16))) return undefined;
  // The part must open the parts array: a part before it (inline data, executed code) has no chat form and fails the answer in the full parse.
  let i = key - 1;
  while (isSpace(data.charCodeAt(i))) i--;
  if (data.charCodeAt(i) !== 123 /* { */) return undefined;
  do i--; while (isSpace(data.charCodeAt(i)));
  if (data.charCodeAt(i) !== 91 /* [ */) return undefined;
  do i--; while (isSpace(data.charCodeAt(i)));
  if (data.charCodeAt(i) !== 58 /* : */) return undefined;
  do i--; while (isSpace(data.charCodeAt(i)));
  if (!data.startsWith('"parts"', i - 6)) return undefined;
  i = key + 6;
  while (isSpace(data.charCodeAt(i))) i++;
  if (data.charCodeAt(i) !== 58 /* : */) return undefined;
  do i++; while (isSpace(data.charCodeAt(i)));
  if (data.charCodeAt(i) !== 34 /* " */) return undefined;
  const start = i;
  const after = stringEnd(data, start);
  if (after < 0) return undefined;
  // The part must close right after its text, and be the last part.
  i = after - 1;
  do i++; while (isSpace(data.charCodeAt(i)));
  if (data.charCodeAt(i) !== 125 /* } */) return undefined;
  do i++; while (isSpace(data.charCodeAt(i)));
  if (data.charCodeAt(i) !== 93 /* ] */) return undefined;
  const text = data.slice(start + 1, after - 1);
  return text.includes('\\') ? JSON.parse(data.slice(start, after)) as string : text;
}

/** Fast-path chunks were never parsed whole, so one may not be valid JSON: then usage is unknown, not an exception. */
function parsedUsage(data: string | undefined): unknown {
  try { return data === undefined ? undefined : JSON.parse(data).usageMetadata; } catch { return undefined; }
}

const RANK = { reasoning: 0, text: 1, call: 2 } as const;

interface CandidateState { started: boolean; calls: number; finished: boolean }

export function streamTranslator(): StreamTranslator {
  // usageMetadata is repeated, cumulative, on chunks: the latest copy is kept (raw from the fast path, parsed otherwise) and read once, at the end.
  let usageRaw: string | undefined;
  let usage: unknown;
  const candidates = new Map<number, CandidateState>();

  function state(index: number): CandidateState {
    let s = candidates.get(index);
    if (!s) { s = { started: false, calls: 0, finished: false }; candidates.set(index, s); }
    return s;
  }

  const one = (choice: ChunkChoice): StreamEvent => ({ type: 'chunk', chunk: { choices: [choice] } });

  /** The delta chunk for `index`, announcing the role on the candidate's first; undefined when there is nothing to say. */
  function deltaFor(index: number, delta: Delta): StreamEvent | undefined {
    const s = state(index);
    if (!s.started) { s.started = true; return one({ index, delta: { role: 'assistant', ...delta }, finish_reason: null }); }
    if (delta.content === undefined && delta.reasoning_content === undefined && delta.tool_calls === undefined) return undefined;
    return one({ index, delta, finish_reason: null });
  }

  function candidateEvents(c: Record<string, any>, position: number, responseId: unknown, out: StreamEvent[]): void {
    const index = typeof c.index === 'number' ? c.index : position;
    const s = state(index);
    const { calls, order } = readParts(c);
    // One delta per run of parts a reader takes in the order it reads a delta's (reasoning, text, calls):
    // parts in another order (a call, then text) go in one delta each, as the model wrote them.
    const deltas: Delta[] = [{}];
    let rank = 0;
    for (const part of order) {
      const r = RANK[part.kind];
      if (r < rank) deltas.push({});
      rank = r;
      const delta = deltas.at(-1)!;
      if (part.kind === 'reasoning') delta.reasoning_content = part.text;
      else if (part.kind === 'text') delta.content = part.text;
      else {
        const k = s.calls++;
        (delta.tool_calls ??= []).push({ index: k, ...toolCall(calls[part.index]!, toolCallId(calls[part.index]!, responseId, index, k)) } satisfies ToolCallDelta);
      }
    }
    for (const delta of deltas) {
      const ev = deltaFor(index, delta);
      if (ev) out.push(ev);
    }
    // A finish repeated on a later chunk (one carrying only usage, say) was already said.
    if (c.finishReason && !s.finished) {
      s.finished = true;
      out.push(one({ index, delta: {}, finish_reason: finishReason(c.finishReason, s.calls > 0) }));
    }
  }

  return {
    event(_name, data) {
      const fast = midStreamText(data);
      if (fast !== undefined) {
        if (data.indexOf('usageMetadata"') >= 0) usageRaw = data;
        const ev = deltaFor(0, fast === '' ? {} : { content: fast });
        return ev ? [ev] : NOTHING;
      }
      let chunk: unknown;
      try { chunk = JSON.parse(data); } catch { return [{ type: 'error', message: 'The upstream sent a malformed stream chunk.' }]; }
      if (!isObj(chunk)) return [{ type: 'error', message: 'The upstream sent a malformed stream chunk.' }];
      if (chunk.error) return inBandErrorEvent(chunk.error, data, errorDetails);
      if (chunk.usageMetadata) { usage = chunk.usageMetadata; usageRaw = undefined; }
      const out: StreamEvent[] = [];
      if (Array.isArray(chunk.candidates) && chunk.candidates.length > 0) {
        try {
          chunk.candidates.forEach((c: unknown, i: number) => {
            if (!isObj(c)) throw new GatewayError('upstream_error', 'The upstream sent a malformed candidate.');
            candidateEvents(c, i, chunk.responseId, out);
          });
        } catch (err) {
          return [...out, { type: 'error', message: err instanceof Error ? err.message : String(err) }];
        }
        return out;
      }
      if (isObj(chunk.promptFeedback) && chunk.promptFeedback.blockReason) {
        // A blocked prompt: no candidate will come. One empty, filtered choice, as OpenAI reports it.
        const ev = deltaFor(0, {});
        if (ev) out.push(ev);
        state(0).finished = true;
        out.push(one({ index: 0, delta: {}, finish_reason: 'content_filter' }));
        return out;
      }
      return NOTHING;
    },

    end() {
      if (candidates.size === 0) return NOTHING;
      for (const s of candidates.values()) if (!s.finished) return NOTHING;
      const reported = usageRaw !== undefined ? parsedUsage(usageRaw) : usage;
      // No usageMetadata is no usage chunk: the gateway's estimate then follows, as for any upstream that sent none.
      if (!isObj(reported)) return [{ type: 'done' }];
      const tail: ChatChunk = { choices: [], usage: readUsage(reported) };
      return [{ type: 'chunk', chunk: tail }, { type: 'done' }];
    },
  };
}
