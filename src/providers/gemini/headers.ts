// Gemini sends no x-ratelimit-* headers. A retry-after is passed on should a
// proxy in front of Gemini add one; the body's RetryInfo is read by errorHeaders.
import type { PassHeaders } from '../../domain.js';

export function passHeaders(headers: Record<string, string | string[] | undefined>): PassHeaders {
  const v = headers['retry-after'];
  if (v === undefined) return [];
  return [['retry-after', Array.isArray(v) ? v.join(', ') : v]];
}
