// OpenAI chat.completion.chunk lines into the gateway's normalised stream events.
import type { StreamEvent, StreamTranslator } from '../../domain.js';
import { readUsage } from './response.js';

export function streamTranslator(): StreamTranslator {
  return {
    event(_name, data) {
      if (data === '[DONE]') return [{ type: 'done' }];
      let chunk: any;
      try { chunk = JSON.parse(data); } catch { return [{ type: 'error', message: 'The upstream sent a malformed stream chunk.' }]; }
      if (chunk?.error) return [{ type: 'error', message: String(chunk.error.message ?? 'Upstream stream error.') }];
      const out: StreamEvent[] = [];
      const choice = Array.isArray(chunk?.choices) ? chunk.choices[0] : undefined;
      if (choice) {
        const delta = choice.delta ?? {};
        const ev: { type: 'delta'; content?: string; role?: string; finish_reason?: string } = { type: 'delta' };
        if (typeof delta.role === 'string') ev.role = delta.role;
        if (typeof delta.content === 'string' && delta.content !== '') ev.content = delta.content;
        if (typeof choice.finish_reason === 'string') ev.finish_reason = choice.finish_reason;
        if (ev.role !== undefined || ev.content !== undefined || ev.finish_reason !== undefined) out.push(ev);
      }
      if (chunk?.usage) out.push({ type: 'usage', usage: readUsage(chunk.usage) });
      return out;
    },
  };
}
