// Anthropic Message object -> an OpenAI chat.completion.
import type { AssistantMessage, ChatCompletion, ToolCall } from '../../domain.js';
import { GatewayError } from '../../errors.js';
import { addPart, noteOrder, type AnswerPart } from '../answer-order.js';
import { isObj, ownEntry } from '../json-shape.js';
import { JSON_TOOL } from './tools.js';
import { openaiUsage, readUsage } from './usage.js';

const FINISH: Record<string, string> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};

/** Anthropic stop_reason -> OpenAI finish_reason; the emulated structured-output tool finishes as a normal stop. */
export function finishReason(stopReason: unknown, json = false): string {
  if (json && stopReason === 'tool_use') return 'stop';
  return (typeof stopReason === 'string' && ownEntry(FINISH, stopReason)) || 'stop';
}

/**
 * Server-tool blocks and types added later answer features the gateway never
 * asks for; an answer holding one fails (JSON and stream alike) rather than
 * reach the caller with a part silently missing.
 */
export const unknownBlock = (type: unknown): string => `The upstream answered with a ${JSON.stringify(type)} content block, which has no OpenAI form.`;

export function chatResponse(body: unknown): ChatCompletion {
  if (!isObj(body) || !Array.isArray(body.content)) throw new GatewayError('upstream_error', 'The upstream returned no message content.');
  let text = '';
  let reasoning = '';
  let json = false;
  const calls: ToolCall[] = [];
  const thinkingBlocks: Array<Record<string, unknown>> = [];
  /** The blocks in the model's order (answer-order.ts). */
  const order: AnswerPart[] = [];
  const addText = (t: string) => { text += t; addPart(order, { kind: 'text', text: t }); };
  const addThinking = (t: string, block: Record<string, unknown>) => {
    reasoning += t;
    thinkingBlocks.push(block);
    addPart(order, { kind: 'reasoning', text: t, blocks: [block] });
  };
  for (const b of body.content) {
    if (!isObj(b)) continue;
    if (b.type === 'text' && typeof b.text === 'string') addText(b.text);
    else if (b.type === 'tool_use' && b.name === JSON_TOOL) { json = true; addText(JSON.stringify(b.input ?? {})); }
    else if (b.type === 'tool_use') {
      addPart(order, { kind: 'call', index: calls.length });
      calls.push({ id: String(b.id), type: 'function', function: { name: String(b.name), arguments: JSON.stringify(b.input ?? {}) } });
    } else if (b.type === 'thinking') addThinking(String(b.thinking ?? ''), { type: 'thinking', thinking: b.thinking, signature: b.signature });
    else if (b.type === 'redacted_thinking') addThinking('', { type: 'redacted_thinking', data: b.data });
    else throw new GatewayError('upstream_error', unknownBlock(b.type));
  }
  // OpenAI sends content null, not "", when the answer is only tool calls.
  const message: AssistantMessage = { role: 'assistant', content: text === '' && calls.length > 0 ? null : text, refusal: null };
  if (calls.length) message.tool_calls = calls;
  if (reasoning) message.reasoning_content = reasoning;
  if (thinkingBlocks.length) message.thinking_blocks = thinkingBlocks;
  noteOrder(message, order);
  return {
    id: typeof body.id === 'string' ? body.id : undefined,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: typeof body.model === 'string' ? body.model : undefined,
    choices: [{ index: 0, message, finish_reason: finishReason(body.stop_reason, json), logprobs: null }],
    usage: openaiUsage(readUsage(isObj(body.usage) ? body.usage : undefined)),
  };
}
