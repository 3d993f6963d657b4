// DEMO ONLY. The built-in `mock` provider answers in-process, with no network:
// `mock-echo` replies with the last user message it received (after DLP, so a
// newcomer can watch redaction happen), and `mock-embed` returns deterministic
// vectors. It lets the gateway run end to end without any credential.
import { createHash } from 'node:crypto';
import type { ChatCompletion, ChatRequest, EmbeddingsRequest, EmbeddingsResult, StreamEvent } from '../../domain.js';
import { estimatePromptTokens, estimateTextTokens, textOf } from '../../routing/token-estimate.js';

function echoText(req: ChatRequest): string {
  for (let i = req.messages.length - 1; i >= 0; i--) {
    const m = req.messages[i]!;
    if (m.role === 'user') return textOf(m.content);
  }
  return '';
}

/** The echo, once per choice asked for (`n`). */
export function mockChat(req: ChatRequest): ChatCompletion {
  const content = echoText(req);
  const prompt = estimatePromptTokens(req.messages);
  const completion = estimateTextTokens(content) * req.n;
  // id and model are written by the pipeline; they come first so the answer reads like OpenAI's.
  return {
    id: '',
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: '',
    choices: Array.from({ length: req.n }, (_, index) => ({ index, message: { role: 'assistant' as const, content }, finish_reason: 'stop' })),
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
  };
}

/** The echo split at word boundaries, one delta per word and choice, then usage. */
export function mockStream(req: ChatRequest): StreamEvent[] {
  const { choices, usage } = mockChat(req);
  const content = choices[0]!.message.content ?? '';
  const chunk = (index: number, delta: Record<string, unknown>, finish: string | null = null): StreamEvent =>
    ({ type: 'chunk', chunk: { choices: [{ index, delta, finish_reason: finish }] } });
  const events: StreamEvent[] = [];
  for (let i = 0; i < req.n; i++) events.push(chunk(i, { role: 'assistant', content: '' }));
  for (const word of content.match(/\S+\s*|\s+/g) ?? []) for (let i = 0; i < req.n; i++) events.push(chunk(i, { content: word }));
  for (let i = 0; i < req.n; i++) events.push(chunk(i, {}, 'stop'));
  events.push({ type: 'chunk', chunk: { choices: [], usage: usage! } }, { type: 'done' });
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
