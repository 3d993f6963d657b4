import type { UpstreamErrorDetails } from '../../domain.js';

const str = (v: unknown): string | undefined => (typeof v === 'string' && v ? v : undefined);

/**
 * OpenAI-style error bodies are `{error: {message, type, param, code}}`; all
 * four are kept so the caller's SDK classifies the error as the provider's.
 * Anything else is shown truncated.
 */
export function errorDetails(status: number, body: string): UpstreamErrorDetails {
  try {
    const parsed = JSON.parse(body);
    const e = parsed?.error;
    const message = str(e?.message) ?? str(parsed?.message) ?? str(e);
    if (message) {
      return {
        message,
        type: str(e?.type),
        param: typeof e?.param === 'string' ? e.param : null,
        code: typeof e?.code === 'string' || typeof e?.code === 'number' ? String(e.code) : null,
      };
    }
  } catch { /* not JSON */ }
  return { message: body ? body.slice(0, 300) : `Upstream answered HTTP ${status}.` };
}
