/**
 * Gemini error bodies are `{error: {code, message, status}}`; a JSON-array
 * stream wraps it as `[{error: …}]`. Anything else is shown truncated.
 */
export function errorMessage(status: number, body: string): string {
  try {
    let parsed = JSON.parse(body);
    if (Array.isArray(parsed)) parsed = parsed[0];
    const msg = parsed?.error?.message;
    if (typeof msg === 'string' && msg) return msg;
  } catch { /* not JSON */ }
  return body ? body.slice(0, 300) : `Upstream answered HTTP ${status}.`;
}
