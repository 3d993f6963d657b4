// Gemini sends no x-ratelimit-* headers. A retry-after is passed on should a
// proxy in front of Gemini add one; the body's RetryInfo is read by errorHeaders.
import type { PassHeaders } from '../../domain.js';
import type { AnswerHead } from '../../upstream/h1/answer-head.js';

export function passHeaders(head: AnswerHead): PassHeaders {
  const v = head.get('retry-after');
  return v === undefined ? [] : [['retry-after', v]];
}
