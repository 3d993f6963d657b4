// Anthropic Messages SSE events -> OpenAI chat.completion.chunk objects, one
// event at a time.
//
// Content blocks are numbered by Anthropic across kinds (thinking, text,
// tool_use); OpenAI numbers only tool calls, so each tool_use block gets the
// next tool-call index when it starts, and its input_json_delta fragments go
// out under that index as they arrive. Usage arrives in halves (input in
// message_start, the running output in message_delta) and is sent once, on a
// final chunk with empty choices, at message_stop.
import type { ChunkChoice, Delta, StreamEvent, StreamTranslator } from '../../domain.js';
import { inBandErrorEvent } from '../in-band-error.js';
import { errorDetails } from './errors.js';
import { finishReason, unknownBlock } from './response.js';
import { JSON_TOOL } from './tools.js';
import { openaiUsage, readUsage, type AnthropicUsage } from './usage.js';

// Shared by every call that emits nothing; frozen so that a consumer mutating it fails loudly.
const NOTHING = Object.freeze([]) as unknown as StreamEvent[];

const chunk = (delta: Delta, finish: string | null = null): StreamEvent[] =>
  [{ type: 'chunk', chunk: { choices: [{ index: 0, delta, finish_reason: finish } satisfies ChunkChoice] } }];

export function streamTranslator(): StreamTranslator {
  const usage: AnthropicUsage = { input: 0, cacheRead: 0, cacheCreation: 0, output: 0 };
  /** Anthropic block index -> the OpenAI tool-call index, or 'json' for the structured-output tool. */
  const blocks = new Map<number, number | 'json'>();
  let tools = 0;
  let json = false;
  /** Tool blocks whose input has had a fragment: one that stops without any had no arguments, which reads `{}`. */
  const argued = new Set<number>();
  /** The thinking text of the block under way: its signature_delta closes it, and the caller needs both to send it back. */
  let thinking = '';
  return {
    event(name, data) {
      // Anthropic names every event after its `type`; pings carry nothing and are not parsed.
      if (name === 'ping') return NOTHING;
      let ev: any;
      try { ev = JSON.parse(data); } catch { return [{ type: 'error', message: 'The upstream sent a malformed stream event.' }]; }
      switch (ev?.type) {
        case 'message_start':
          readUsage(ev.message?.usage, usage);
          return chunk({ role: 'assistant', content: '' });
        case 'content_block_start': {
          const b = ev.content_block;
          if (b?.type === 'tool_use' && b.name === JSON_TOOL) { blocks.set(ev.index, 'json'); json = true; return NOTHING; }
          if (b?.type === 'tool_use') {
            const k = tools++;
            blocks.set(ev.index, k);
            return chunk({ tool_calls: [{ index: k, id: String(b.id), type: 'function', function: { name: String(b.name), arguments: '' } }] });
          }
          if (b?.type === 'text' && typeof b.text === 'string' && b.text !== '') return chunk({ content: b.text });
          if (b?.type === 'redacted_thinking') return chunk({ thinking_blocks: [{ type: 'redacted_thinking', data: b.data }] });
          // A thinking block's text comes in its deltas, as an empty text block's does.
          if (b?.type === 'thinking' || b?.type === 'text') return NOTHING;
          return [{ type: 'error', message: unknownBlock(b?.type) }];
        }
        case 'content_block_delta': {
          const d = ev.delta;
          if (d?.type === 'text_delta' && typeof d.text === 'string' && d.text !== '') return chunk({ content: d.text });
          if (d?.type === 'input_json_delta' && typeof d.partial_json === 'string' && d.partial_json !== '') {
            const k = blocks.get(ev.index);
            argued.add(ev.index);
            if (k === 'json') return chunk({ content: d.partial_json });
            if (k !== undefined) return chunk({ tool_calls: [{ index: k, function: { arguments: d.partial_json } }] });
            return NOTHING;
          }
          if (d?.type === 'thinking_delta' && typeof d.thinking === 'string' && d.thinking !== '') {
            thinking += d.thinking;
            return chunk({ reasoning_content: d.thinking });
          }
          // The whole signed block, which a caller must send back to continue a tool loop after thinking.
          // Sent here as it is signed, each in a delta of its own, which the Responses translation
          // needs (one reasoning item per run of blocks); a chat caller gets every block of the
          // answer together with the finish reason (pipeline/held-thinking-blocks.ts).
          if (d?.type === 'signature_delta' && typeof d.signature === 'string') {
            const block = { type: 'thinking', thinking, signature: d.signature };
            thinking = '';
            return chunk({ thinking_blocks: [block] });
          }
          return NOTHING;
        }
        case 'content_block_stop': {
          // A call with no arguments streams no fragment (or an empty one); the JSON answer, OpenAI
          // and Gemini all give it "{}", and the openai SDK's JSON.parse of "" throws.
          const k = blocks.get(ev.index);
          if (k === undefined || argued.has(ev.index)) return NOTHING;
          argued.add(ev.index);
          return k === 'json' ? chunk({ content: '{}' }) : chunk({ tool_calls: [{ index: k, function: { arguments: '{}' } }] });
        }
        case 'message_delta': {
          readUsage(ev.usage, usage);
          const reason = ev.delta?.stop_reason;
          return reason ? chunk({}, finishReason(reason, json)) : NOTHING;
        }
        case 'message_stop':
          return [{ type: 'chunk', chunk: { choices: [], usage: openaiUsage(usage) } }, { type: 'done' }];
        case 'error':
          return inBandErrorEvent(ev.error, data, errorDetails);
        default:
          // Event types added after this was written (Anthropic's versioning policy allows new ones).
          return NOTHING;
      }
    },
  };
}
