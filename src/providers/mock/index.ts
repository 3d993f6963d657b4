// DEMO ONLY. The built-in `mock` provider answers in-process, with no network:
// `mock-echo` replies with the last user message it received (after DLP, so a
// newcomer can watch redaction happen), and `mock-embed` returns deterministic
// vectors. It lets the gateway run end to end without any credential.
import { createHash } from 'node:crypto';
import type { ChatRequest, ChatResult, EmbeddingsRequest, EmbeddingsResult, StreamEvent } from '../../domain.js';
import { estimatePromptTokens, estimateTextTokens, textOf } from '../../routing/token-estimate.js';

function echoText(req: ChatRequest): string {
  for (let i = req.messages.length - 1; i >= 0; i--) {
    const m = req.messages[i]!;
    if (m.role === 'user') return textOf(m.content);
  }
  return '';
}

export function mockChat(req: ChatRequest): ChatResult {
  const content = echoText(req);
  const prompt = estimatePromptTokens(req.messages);
  const completion = estimateTextTokens(content);
  return { content, finish_reason: 'stop', usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } };
}

/** The echo split at word boundaries, one delta per word, then usage. */
export function mockStream(req: ChatRequest): StreamEvent[] {
  const { content, usage } = mockChat(req);
  const events: StreamEvent[] = [{ type: 'delta', role: 'assistant' }];
  for (const word of content.match(/\S+\s*|\s+/g) ?? []) events.push({ type: 'delta', content: word });
  events.push({ type: 'delta', finish_reason: 'stop' }, { type: 'usage', usage }, { type: 'done' });
  return events;
}

export function mockEmbeddings(req: EmbeddingsRequest): EmbeddingsResult {
  const dims = req.dimensions ?? 8;
  const vectors = req.input.map((text) => {
    const digest = createHash('sha256').update(text).digest();
    return Array.from({ length: dims }, (_, i) => (digest[i % digest.length]! - 128) / 128);
  });
  const tokens = req.input.reduce((n, t) => n + estimateTextTokens(t), 0);
  return { vectors, usage: { prompt_tokens: tokens, total_tokens: tokens } };
}
