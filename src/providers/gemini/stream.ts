// Gemini streamGenerateContent?alt=sse chunks -> normalised stream events.
//
// Every chunk is a whole GenerateContentResponse and there is no terminator
// event: the chunk carrying `finishReason` is the last one, so it closes the
// stream with usage and `done`. A stream that ends without `done` was cut
// short. Gemini reports a failure mid-stream as a chunk holding
// `{error: {code, message, status}}`.
import type { StreamEvent, StreamTranslator } from '../../domain.js';
import { candidateText, finishReason, readUsage } from './response.js';

// Shared by every call that emits nothing; frozen so that a consumer mutating it fails loudly.
const NOTHING = Object.freeze([]) as unknown as StreamEvent[];

const isSpace = (c: number) => c === 32 || c === 9 || c === 10 || c === 13;

/**
 * The text of a plain mid-stream chunk, cut straight out of the raw JSON, or
 * undefined when the chunk needs a full parse. JSON.parse of a whole chunk
 * (usage, model version, ids) costs about 2 µs, the translator's whole budget.
 *
 * The fast path takes only a chunk whose one part is `{"text": "…"}` and that
 * has no `finishReason`. Keys are matched with a quote, which answer text
 * cannot produce: inside a JSON string every quote is escaped. Error and
 * blocked-prompt chunks have no text part, so they always take the full parse.
 */
export function midStreamText(data: string): string | undefined {
  const key = data.indexOf('"text"');
  if (key < 0 || data.indexOf('finishReason"') >= 0) return undefined;
  let i = key - 1;
  while (isSpace(data.charCodeAt(i))) i--;
  if (data.charCodeAt(i) !== 123 /* { */) return undefined;
  i = key + 6;
  while (isSpace(data.charCodeAt(i))) i++;
  if (data.charCodeAt(i) !== 58 /* : */) return undefined;
  do i++; while (isSpace(data.charCodeAt(i)));
  if (data.charCodeAt(i) !== 34 /* " */) return undefined;
  const start = i;
  let escaped = false;
  for (i = start + 1; i < data.length; i++) {
    const c = data.charCodeAt(i);
    if (c === 34) break;
    if (c === 92 /* \ */) { escaped = true; i++; }
  }
  const end = i;
  // The part must close right after its text, and be the only part.
  do i++; while (isSpace(data.charCodeAt(i)));
  if (data.charCodeAt(i) !== 125 /* } */) return undefined;
  do i++; while (isSpace(data.charCodeAt(i)));
  if (data.charCodeAt(i) !== 93 /* ] */) return undefined;
  return escaped ? JSON.parse(data.slice(start, end + 1)) : data.slice(start + 1, end);
}

/** Fast-path chunks were never parsed whole, so one may not be valid JSON: then usage is unknown, not an exception. */
function earlierUsage(data: string | undefined): unknown {
  try { return data === undefined ? undefined : JSON.parse(data).usageMetadata; } catch { return undefined; }
}

export function streamTranslator(): StreamTranslator {
  // usageMetadata is repeated, cumulative, on chunks: the latest raw copy is kept and parsed once, at the end.
  let usageChunk: string | undefined;
  let started = false;

  function delta(text: string): StreamEvent[] {
    if (started) return text === '' ? NOTHING : [{ type: 'delta', content: text }];
    // OpenAI streams announce the role once, on the first chunk.
    started = true;
    return text === '' ? [{ type: 'delta', role: 'assistant' }] : [{ type: 'delta', role: 'assistant', content: text }];
  }

  return {
    event(_name, data) {
      const fast = midStreamText(data);
      if (fast !== undefined) {
        if (data.indexOf('usageMetadata"') >= 0) usageChunk = data;
        return delta(fast);
      }
      let chunk: any;
      try { chunk = JSON.parse(data); } catch { return [{ type: 'error', message: 'The upstream sent a malformed stream chunk.' }]; }
      if (chunk?.error) return [{ type: 'error', message: String(chunk.error.message ?? 'Gemini stream error.') }];
      if (chunk?.usageMetadata) usageChunk = data;
      const candidate = chunk?.candidates?.[0];
      let reason: string | undefined;
      if (candidate) {
        if (candidate.finishReason) reason = finishReason(candidate.finishReason);
      } else if (chunk?.promptFeedback?.blockReason) {
        reason = 'content_filter';
      } else {
        return NOTHING;
      }
      const out = delta(candidate ? candidateText(candidate) : '');
      if (reason === undefined) return out;
      const usage = usageChunk === data ? chunk.usageMetadata : earlierUsage(usageChunk);
      return [...out, { type: 'delta', finish_reason: reason }, { type: 'usage', usage: readUsage(usage) }, { type: 'done' }];
    },
  };
}
