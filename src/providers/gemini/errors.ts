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

/**
 * Gemini answers a wrong API key with 400 INVALID_ARGUMENT (reason
 * API_KEY_INVALID), not 401: without this the caller would be told that their
 * own request was bad.
 */
export function credentialRejected(status: number, body: string): boolean {
  return status === 400 && (body.includes('API_KEY_INVALID') || body.includes('API key not valid'));
}
