// What output moderation reads of an answer: every string in it, at any depth,
// but for members known to hold no text a reader is shown (ids, kinds,
// statuses, a tool's name, and bytes: audio, images, sealed or signed
// reasoning). Deny by default, as DLP reads a request (text-walk.ts): a member
// a provider adds tomorrow (a new output item, a vendor's field) is read too,
// where a list of known texts would let it through unmoderated.

/** Members that name, number or seal, never say: skipped at any depth. */
export const NOT_SHOWN: ReadonlySet<string> = new Set([
  'id', 'type', 'object', 'role', 'status', 'index', 'name', 'call_id', 'item_id',
  'output_index', 'content_index', 'summary_index', 'sequence_number', 'created_at', 'expires_at',
  // Bytes and seals: base64 audio or images, a redacted thinking block, a signature, OpenAI's encrypted reasoning.
  'data', 'result', 'signature', 'thought_signature', 'encrypted_content', 'format',
  // Per-token log probabilities repeat the text they score, token by token; token ids (vLLM's) only number it.
  // A token's alternatives (top_logprobs) do not: moderation cannot read them, so they are refused or emptied
  // (pipeline/token-alternatives.ts).
  'logprobs', 'token_ids', 'prompt_token_ids',
]);

/**
 * Appends to `out` every non-empty string in `value` a reader is shown, and
 * every number as its text (a content of 4111111111111111 is shown as the
 * digits; until 2026-11-29 numbers were not read), in document order. A loop
 * over a stack, not recursion: an upstream's answer may nest deeper than the
 * call stack goes.
 */
export function shownTexts(value: unknown, out: string[], skip: ReadonlySet<string> = NOT_SHOWN): string[] {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') {
      if (v) out.push(v);
    } else if (typeof v === 'number') {
      out.push(String(v));
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push(v[i]);
    } else if (v !== null && typeof v === 'object') {
      const keys = Object.keys(v);
      for (let i = keys.length - 1; i >= 0; i--) if (!skip.has(keys[i]!)) stack.push((v as Record<string, unknown>)[keys[i]!]);
    }
  }
  return out;
}
