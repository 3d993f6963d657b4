// Folds a stream's chunks into the completion they add up to, choice by
// choice: content, refusal, reasoning, tool calls merged by index, finish
// reasons, and the upstream's usage. Buffered moderation reads it, the trace
// takes its usage (or an estimate from its text), and the payload archive
// stores it as the response.
import type { AssistantMessage, ChatChunk, ChatCompletion, Choice, ToolCall, Usage } from '../domain.js';

export class StreamAccumulator {
  /** Made on the first chunk folded in: a skimmed stream never needs it, and an empty Map holds a table of its own for the stream's life. */
  private choices: Map<number, Choice> | undefined;
  /** Output characters of skimmed chunks, for a usage estimate should the upstream never report usage. */
  private skimmedChars = 0;
  /** The last usage the upstream reported (OpenAI sends it once, on the final chunk). */
  usage: Usage | undefined;

  /**
   * For a stream nobody reads the text of: usage is taken, and otherwise only
   * the size of the output is counted (`outputBytes`, read off an unparsed
   * chunk's text by the caller), so a stream of any length costs the same
   * memory. Callers that read the text (moderation, the payload archive) `add`
   * every chunk instead.
   */
  skim(ev: { readonly chunk: ChatChunk; plain?: unknown }, outputBytes: number): void {
    if (!ev.plain && ev.chunk.usage) this.usage = ev.chunk.usage;
    this.skimmedChars += outputBytes;
  }

  /** Output characters seen, for an estimate: skimmed or folded in. */
  get outputChars(): number {
    return this.skimmedChars + outputChars(this.completion);
  }

  add(chunk: ChatChunk): void {
    if (chunk.usage) this.usage = chunk.usage;
    const choices = (this.choices ??= new Map());
    for (const c of chunk.choices) {
      let choice = choices.get(c.index);
      if (!choice) {
        choice = { index: c.index, message: { role: 'assistant', content: null }, finish_reason: null };
        choices.set(c.index, choice);
      }
      const d = c.delta;
      if (d) {
        const m = choice.message;
        if (typeof d.content === 'string') m.content = (m.content ?? '') + d.content;
        if (typeof d.refusal === 'string') m.refusal = (m.refusal ?? '') + d.refusal;
        if (typeof d.reasoning_content === 'string') m.reasoning_content = (m.reasoning_content ?? '') + d.reasoning_content;
        if (Array.isArray(d.tool_calls)) for (const t of d.tool_calls) mergeToolCall(m, t);
        // Signed thinking (Anthropic) arrives whole in one delta; the payload archive keeps it to replay a tool loop.
        if (Array.isArray(d.thinking_blocks)) ((m.thinking_blocks ??= []) as unknown[]).push(...d.thinking_blocks);
      }
      if (c.finish_reason) choice.finish_reason = c.finish_reason;
    }
  }

  get completion(): ChatCompletion {
    const choices = this.choices ? [...this.choices.values()].sort((a, b) => a.index - b.index) : [];
    return this.usage ? { choices, usage: this.usage } : { choices };
  }
}

function mergeToolCall(m: AssistantMessage, t: { index: number; id?: string; type?: string; function?: { name?: string; arguments?: string } }): void {
  const calls = (m.tool_calls ??= []);
  let call: ToolCall | undefined = calls[t.index];
  if (!call) {
    call = { id: '', type: 'function', function: { name: '', arguments: '' } };
    calls[t.index] = call;
  }
  if (t.id) call.id = t.id;
  if (t.function?.name) call.function.name += t.function.name;
  if (t.function?.arguments) call.function.arguments += t.function.arguments;
}

/** The texts of one choice that moderation must see: content, refusal and every tool call's arguments. */
export function outputTexts(message: AssistantMessage): string[] {
  const out: string[] = [];
  if (typeof message.content === 'string' && message.content) out.push(message.content);
  if (typeof message.refusal === 'string' && message.refusal) out.push(message.refusal);
  if (Array.isArray(message.tool_calls)) {
    for (const t of message.tool_calls) if (typeof t?.function?.arguments === 'string' && t.function.arguments) out.push(t.function.arguments);
  }
  return out;
}

/** Characters of output across all choices, for a usage estimate when the upstream reported none. */
export function outputChars(completion: ChatCompletion): number {
  let n = 0;
  for (const c of completion.choices) if (c?.message) for (const t of outputTexts(c.message)) n += t.length;
  return n;
}
