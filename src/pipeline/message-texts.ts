// Every text of a chat request that the upstream will read and that can carry
// a caller's data: message content (strings, text parts and an assistant's
// refusal parts), `name`, an assistant's `refusal` and `reasoning_content`
// (both go back upstream in a multi-turn conversation), and the arguments of
// the tool calls an assistant turn made (tool results are `tool` messages, so
// their content is covered as content). One walker serves both
// directions, so collecting and replacing can never disagree on the order.
import type { ChatMessage, ContentPart, ToolCall } from '../domain.js';

type MapText = (text: string) => string;

function mapParts(parts: ContentPart[], f: MapText): ContentPart[] {
  let out: ContentPart[] | undefined;
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    const key = p.type === 'text' ? 'text' : p.type === 'refusal' ? 'refusal' : undefined;
    const text = key && p[key];
    if (typeof text !== 'string') continue;
    const t = f(text);
    if (t !== text) (out ??= parts.slice())[i] = { ...p, [key!]: t };
  }
  return out ?? parts;
}

/**
 * JSON values, leaf by leaf: each string, and each number as its text. A
 * number that must be redacted becomes its placeholder string, so the result
 * is still JSON (`{"card":4111…}` → `{"card":"[CARD_1]"}`) where redacting the
 * raw text would have made it unparseable. Keys are left alone.
 */
function mapJson(value: unknown, f: MapText): unknown {
  if (typeof value === 'string') return f(value);
  if (typeof value === 'number') {
    const text = String(value);
    const t = f(text);
    return t === text ? value : t;
  }
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    value.forEach((v, i) => { const m = mapJson(v, f); if (m !== v) (out ??= value.slice())[i] = m; });
    return out ?? value;
  }
  if (value !== null && typeof value === 'object') {
    let out: Record<string, unknown> | undefined;
    for (const [k, v] of Object.entries(value)) { const m = mapJson(v, f); if (m !== v) (out ??= { ...value })[k] = m; }
    return out ?? value;
  }
  return value;
}

/** Tool-call arguments are JSON text: mapped value by value when they parse, as one text when they do not. */
function mapArguments(args: string, f: MapText): string {
  let parsed: unknown;
  try { parsed = JSON.parse(args); } catch { return f(args); }
  if (parsed === null || typeof parsed !== 'object') return f(args);
  const mapped = mapJson(parsed, f);
  return mapped === parsed ? args : JSON.stringify(mapped);
}

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
      const parts = mapParts(m.content, f);
      if (parts !== m.content) out = { ...m, content: parts };
    }
    for (const key of STRING_FIELDS) {
      const v = m[key];
      if (typeof v !== 'string') continue;
      const t = f(v);
      if (t !== v) out = { ...(out ?? m), [key]: t };
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
