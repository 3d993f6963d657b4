// Anthropic Messages SSE events -> normalised stream events, one event at a time.
//
// Usage arrives in two halves: prompt tokens in `message_start`, the running
// output total in `message_delta`. Both are held here and emitted once, with
// `done`, on `message_stop`, so the pipeline can put them on the final chunk.
import type { StreamEvent, StreamTranslator } from '../../domain.js';
import { finishReason, promptTokens, usageOf } from './response.js';

// Shared by every call that emits nothing; frozen so that a consumer mutating it fails loudly.
const NOTHING = Object.freeze([]) as unknown as StreamEvent[];

export function streamTranslator(): StreamTranslator {
  let prompt = 0;
  let completion = 0;
  return {
    event(name, data) {
      // Anthropic names every event after its `type`; pings carry nothing and are not parsed.
      if (name === 'ping') return NOTHING;
      let ev: any;
      try { ev = JSON.parse(data); } catch { return [{ type: 'error', message: 'The upstream sent a malformed stream event.' }]; }
      switch (ev?.type) {
        case 'content_block_delta': {
          const d = ev.delta;
          return d?.type === 'text_delta' && typeof d.text === 'string' && d.text !== '' ? [{ type: 'delta', content: d.text }] : NOTHING;
        }
        case 'message_start': {
          const u = ev.message?.usage;
          if (u) { prompt = promptTokens(u); completion = Number(u.output_tokens) || 0; }
          return [{ type: 'delta', role: 'assistant' }];
        }
        case 'content_block_start': {
          const b = ev.content_block;
          return b?.type === 'text' && typeof b.text === 'string' && b.text !== '' ? [{ type: 'delta', content: b.text }] : NOTHING;
        }
        case 'message_delta': {
          // output_tokens here is cumulative; input counts appear only when the server revises them.
          const u = ev.usage;
          if (u) {
            if (u.output_tokens != null) completion = Number(u.output_tokens) || 0;
            if (u.input_tokens != null) prompt = promptTokens(u);
          }
          const reason = ev.delta?.stop_reason;
          return reason ? [{ type: 'delta', finish_reason: finishReason(reason) }] : NOTHING;
        }
        case 'message_stop':
          return [{ type: 'usage', usage: usageOf(prompt, completion) }, { type: 'done' }];
        case 'error':
          return [{ type: 'error', message: String(ev.error?.message ?? 'Anthropic stream error.') }];
        default:
          // content_block_stop, and event types added after this was written (Anthropic's versioning policy allows new ones).
          return NOTHING;
      }
    },
  };
}
