// Gemini streamGenerateContent?alt=sse chunks -> normalised stream events.
//
// Every chunk is a whole GenerateContentResponse and there is no terminator
// event: the chunk carrying `finishReason` is the last one, so it closes the
// stream with usage and `done`. `usageMetadata` is repeated (cumulative) on
// chunks, so only the latest copy is kept. A stream that ends without `done`
// was cut short. Gemini reports a failure mid-stream as a chunk holding
// `{error: {code, message, status}}`.
import type { StreamEvent, StreamTranslator } from '../../domain.js';
import { candidateText, finishReason, readUsage } from './response.js';

const NOTHING: StreamEvent[] = [];

export function streamTranslator(): StreamTranslator {
  let usage: unknown;
  let started = false;
  return {
    event(_name, data) {
      let chunk: any;
      try { chunk = JSON.parse(data); } catch { return [{ type: 'error', message: 'The upstream sent a malformed stream chunk.' }]; }
      if (chunk?.error) return [{ type: 'error', message: String(chunk.error.message ?? 'Gemini stream error.') }];
      if (chunk?.usageMetadata) usage = chunk.usageMetadata;
      const candidate = chunk?.candidates?.[0];
      let reason: string | undefined;
      if (candidate) {
        if (candidate.finishReason) reason = finishReason(candidate.finishReason);
      } else if (chunk?.promptFeedback?.blockReason) {
        reason = 'content_filter';
      } else {
        return NOTHING;
      }
      const out: StreamEvent[] = [];
      const text = candidate ? candidateText(candidate) : '';
      if (text !== '' || !started) {
        // OpenAI streams announce the role once, on the first chunk.
        const ev: { type: 'delta'; content?: string; role?: string } = { type: 'delta' };
        if (!started) { ev.role = 'assistant'; started = true; }
        if (text !== '') ev.content = text;
        out.push(ev);
      }
      if (reason !== undefined) out.push({ type: 'delta', finish_reason: reason }, { type: 'usage', usage: readUsage(usage) }, { type: 'done' });
      return out;
    },
  };
}
