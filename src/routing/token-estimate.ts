// A cheap prompt-size estimate for routing decisions (context fit, auto's cost
// ranking, dry-run cost). About four characters per token for English text, plus
// the per-message framing OpenAI documents; never used for billing, which
// always uses the usage the upstream reports.
import type { ChatMessage } from '../domain.js';

const PER_MESSAGE = 4;

export function textOf(content: ChatMessage['content']): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let s = '';
  for (const part of content) if (part && part.type === 'text' && typeof part.text === 'string') s += part.text;
  return s;
}

/**
 * What an image or any other media part stands for, in characters: 765
 * tokens, a 1024-pixel image at high detail. Providers bill media by its size,
 * not by the length of its URL or bytes, so neither is counted.
 */
const MEDIA_CHARS = 765 * 4;

/** A part's text (or refusal) in characters, or the fixed share a media part stands for; 0 for what is no part. */
function partChars(part: unknown, media: boolean): number {
  if (part === null || typeof part !== 'object') return 0;
  const p = part as Record<string, unknown>;
  if (typeof p.text === 'string') return media ? 0 : p.text.length;
  if (typeof p.refusal === 'string') return media ? 0 : p.refusal.length;
  return MEDIA_CHARS;
}

/** Characters of a content: its text, its text parts, and a fixed share per media part. */
function contentChars(content: unknown): number {
  if (typeof content === 'string') return content.length;
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const part of content) n += partChars(part, false);
  return n;
}

const strLength = (v: unknown): number => (typeof v === 'string' ? v.length : 0);

/** A call's name and arguments: the upstream reads an earlier turn's calls as prompt. */
function callChars(fn: unknown): number {
  if (fn === null || typeof fn !== 'object') return 0;
  const f = fn as Record<string, unknown>;
  return strLength(f.name) + strLength(f.arguments);
}

/**
 * Every message's text the upstream reads as prompt (content, names,
 * refusals, reasoning, an earlier turn's tool calls), and `extraChars`, the
 * request's tools and schemas (definitionChars). Until 2026-11-29 only the
 * content's text was counted, so a prompt carried in tools, call arguments or
 * a part of another kind passed a tpm limit many times over.
 */
export function estimatePromptTokens(messages: readonly ChatMessage[], extraChars = 0): number {
  let chars = extraChars;
  for (const m of messages) {
    chars += contentChars(m.content) + strLength(m.name) + strLength(m.refusal) + strLength(m.reasoning_content);
    if (Array.isArray(m.tool_calls)) for (const t of m.tool_calls) chars += callChars(t?.function);
    if (m.function_call !== undefined) chars += callChars(m.function_call);
  }
  return Math.ceil(chars / 4) + PER_MESSAGE * messages.length + 2;
}

/** Characters of a request's tools and schemas (chat's or the Responses API's), which the upstream reads as prompt, as their JSON. */
const DEFINITIONS = ['tools', 'functions', 'response_format', 'text'] as const;

export function definitionChars(raw: Readonly<Record<string, unknown>>): number {
  let n = 0;
  for (const key of DEFINITIONS) {
    const v = raw[key];
    if (v !== undefined && v !== null) n += JSON.stringify(v).length;
  }
  return n;
}

/** Characters the media parts of Responses input items stand for (their texts and refusals are counted as texts). */
export function mediaChars(items: readonly unknown[]): number {
  let n = 0;
  for (const it of items) {
    const content = it !== null && typeof it === 'object' ? (it as Record<string, unknown>).content : undefined;
    if (Array.isArray(content)) for (const part of content) n += partChars(part, true);
  }
  return n;
}

export const estimateTextTokens = (text: string): number => Math.ceil(text.length / 4);

export function costUsd(pricing: { prompt: number; completion: number }, promptTokens: number, completionTokens: number): number {
  // Pricing is per million tokens; round to a nano-dollar so float noise stays out of JSON.
  return Math.round((promptTokens * pricing.prompt + completionTokens * pricing.completion) * 1000) / 1e9;
}
