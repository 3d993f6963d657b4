// Every text of a chat request that the upstream will read and that can carry
// a caller's data: message content (strings, text parts and an assistant's
// refusal parts), `name`, an assistant's `refusal`, `reasoning_content` and
// the text of its `thinking_blocks` (all go back upstream in a multi-turn
// conversation; a redacted thinking block no longer matches its signature,
// and Anthropic refuses it, which is the point), and the arguments of
// the tool calls an assistant turn made (tool results are `tool` messages, so
// their content is covered as content). One walker serves both
// directions, so collecting and replacing can never disagree on the order.
import type { ChatMessage, ContentPart, ToolCall } from '../domain.js';
import { mapArguments, mapTextParts, thinkingKey, type MapText } from '../policy/text-walk.js';

/** Which key of a content part holds its text: `text` for text parts, `refusal` for an assistant's refusal parts. */
const chatPartKey = (p: Record<string, unknown>): string | undefined => (p.type === 'text' ? 'text' : p.type === 'refusal' ? 'refusal' : undefined);

function mapToolCalls(calls: ToolCall[], f: MapText): ToolCall[] {
  let out: ToolCall[] | undefined;
  for (let i = 0; i < calls.length; i++) {
    const c = calls[i]!;
    const args = c?.function?.arguments;
    if (typeof args !== 'string') continue;
    const t = mapArguments(args, f);
    if (t !== args) (out ??= calls.slice())[i] = { ...c, function: { ...c.function, arguments: t } };
  }
  return out ?? calls;
}

/** Plain string fields of a message that reach the upstream besides its content. */
const STRING_FIELDS = ['name', 'refusal', 'reasoning_content'] as const;

/** The messages with `f` applied to each text; objects are copied only where a text changed, never mutated. */
export function mapMessageTexts(messages: readonly ChatMessage[], f: MapText): ChatMessage[] {
  return messages.map((m) => {
    let out: ChatMessage | undefined;
    if (typeof m.content === 'string') {
      const t = f(m.content);
      if (t !== m.content) out = { ...m, content: t };
    } else if (Array.isArray(m.content)) {
      const parts = mapTextParts(m.content, chatPartKey, f) as ContentPart[];
      if (parts !== m.content) out = { ...m, content: parts };
    }
    for (const key of STRING_FIELDS) {
      const v = m[key];
      if (typeof v !== 'string') continue;
      const t = f(v);
      if (t !== v) out = { ...(out ?? m), [key]: t };
    }
    if (Array.isArray(m.thinking_blocks)) {
      const blocks = mapTextParts(m.thinking_blocks, thinkingKey, f);
      if (blocks !== m.thinking_blocks) out = { ...(out ?? m), thinking_blocks: blocks };
    }
    if (Array.isArray(m.tool_calls)) {
      const calls = mapToolCalls(m.tool_calls, f);
      if (calls !== m.tool_calls) out = { ...(out ?? m), tool_calls: calls };
    }
    // The deprecated single function_call of older clients.
    const fc = m.function_call as { arguments?: unknown } | undefined;
    if (fc && typeof fc.arguments === 'string') {
      const t = mapArguments(fc.arguments, f);
      if (t !== fc.arguments) out = { ...(out ?? m), function_call: { ...fc, arguments: t } };
    }
    return out ?? m;
  });
}

export function collectTexts(messages: readonly ChatMessage[]): string[] {
  const texts: string[] = [];
  mapMessageTexts(messages, (t) => { texts.push(t); return t; });
  return texts;
}

export function replaceTexts(messages: readonly ChatMessage[], texts: readonly string[]): ChatMessage[] {
  let i = 0;
  return mapMessageTexts(messages, () => texts[i++]!);
}
