// Rate-limit headers pass back unchanged: the openai SDK reads retry-after
// (and retry-after-ms) to time its retries, and callers read x-ratelimit-* to
// pace themselves. Nothing else of the upstream's headers is the caller's.
import type { PassHeaders } from '../../domain.js';

export function passHeaders(headers: Record<string, string | string[] | undefined>): PassHeaders {
  const out: PassHeaders = [];
  for (const name in headers) {
    if (name === 'retry-after' || name === 'retry-after-ms' || name.startsWith('x-ratelimit-')) {
      const v = headers[name];
      if (v !== undefined) out.push([name, Array.isArray(v) ? v.join(', ') : v]);
    }
  }
  return out;
}
