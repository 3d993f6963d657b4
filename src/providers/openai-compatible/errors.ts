/** OpenAI-style error bodies are `{error: {message}}`; anything else is shown truncated. */
export function errorMessage(status: number, body: string): string {
  try {
    const parsed = JSON.parse(body);
    const msg = parsed?.error?.message ?? parsed?.message;
    if (typeof msg === 'string' && msg) return msg;
  } catch { /* not JSON */ }
  return body ? body.slice(0, 300) : `Upstream answered HTTP ${status}.`;
}
