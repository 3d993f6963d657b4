/** Anthropic error bodies are `{type: 'error', error: {type, message}}`; anything else is shown truncated. */
export function errorMessage(status: number, body: string): string {
  try {
    const msg = JSON.parse(body)?.error?.message;
    if (typeof msg === 'string' && msg) return msg;
  } catch { /* not JSON */ }
  return body ? body.slice(0, 300) : `Upstream answered HTTP ${status}.`;
}
