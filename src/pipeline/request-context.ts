// Per-request state: the id used in every response, trace and payload archive,
// the start time, and the trace fields each stage fills in as it goes.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { TracePayload, TraceRecord } from '../domain.js';
import { payloadText } from '../traces/payload-archive.js';
import type { KeyRecord } from '../store/api-keys-repo.js';
import type { Admission } from '../limits/gate.js';

const HEX_BYTE = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** The millisecond of this thread's last id, and the counter its ids in that millisecond carry. */
let lastMs = -1;
let seq = 0;

/**
 * `req_` and a UUIDv7 in hex without dashes: unique without coordination
 * between instances (62 random bits), and ordered by its millisecond. Traces
 * are keyed by request id, and a random id sent each row to a random leaf of
 * the primary-key index; time-ordered ids append at its right edge. Postgres
 * then spent 14.9-15.2 µs of CPU per trace instead of 17.2-17.7, and COPY
 * into a table growing to 2 million rows ran at 59.7k rows/s instead of 47.2k,
 * falling as the index grew (bench/trace-writer.ts). Built from randomUUID's
 * pooled random bytes: the uuid package's v7 took 2.2 µs an id, this 0.6.
 *
 * The 12 bits after the version are a counter within the millisecond (RFC
 * 9562 §6.2, method 1), from a random start below 2,048: the ids one thread
 * makes in one millisecond sort in the order it made them. Traces are listed
 * newest first by created_at, which holds only the millisecond, then by id;
 * with random bits there, two requests of one millisecond listed in either
 * order (a fast machine made the traces listing test fail so).
 */
export function newRequestId(): string {
  const u = randomUUID(); // xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx: V carries the RFC 9562 variant
  const ms = Date.now();
  seq = ms === lastMs ? (seq + 1) & 0xfff : parseInt(u.slice(15, 18), 16) & 0x7ff;
  lastMs = ms;
  return `req_${hex48(ms)}7${HEX_BYTE[seq >> 8]![1]}${HEX_BYTE[seq & 255]}${u.slice(19, 23)}${u.slice(24)}`;
}

/**
 * `n` (0 ≤ n < 2^48) as 12 hex digits. Number#toString(16) takes V8's
 * general radix conversion: an id cost 0.80 µs with it, 0.51 with this.
 */
export function hex48(n: number): string {
  const hi = Math.floor(n / 0x1000000);
  const lo = n - hi * 0x1000000;
  return HEX_BYTE[(hi >>> 16) & 255]! + HEX_BYTE[(hi >>> 8) & 255]! + HEX_BYTE[hi & 255]!
    + HEX_BYTE[(lo >>> 16) & 255]! + HEX_BYTE[(lo >>> 8) & 255]! + HEX_BYTE[lo & 255]!;
}

/**
 * What a handler resolves with when it started a stream that ends the request
 * itself, by calling `ctx.end` once the stream is over (stream-end.ts).
 */
export const HANDED_OFF = Symbol('handed off');

/** Until the front door sets it: a context made outside a request has nobody to tell. */
function noEnd(): void {}

export class RequestContext {
  readonly requestId: string;
  readonly startedAt = performance.now();
  readonly startedEpoch = Date.now();
  key: KeyRecord | undefined;
  /** The chat completion's id: the request id's hex under OpenAI's prefix, so either leads to the other. */
  get completionId(): string { return `chatcmpl_${this.requestId.slice(4)}`; }
  /** Set when a rate limit or budget applied to this request: settled once its usage is known. */
  admission: Admission | undefined = undefined;
  /** Set once an upstream has answered: a failure past here while reading the answer is the upstream's (answerFault). */
  answered = false;
  /** False for a request that writes no trace (management, operational, console): the front door sets it. */
  traced = true;
  trace: Omit<TraceRecord, 'request_id' | 'organization_id' | 'api_key_id' | 'latency_ms' | 'created_at' | 'payload'> & { payload?: TracePayload };
  /**
   * Ends the request, once: the error reply when `err` is given, then the
   * metrics, the trace and the drain count. The front door sets it; a handler
   * that returned HANDED_OFF leaves the call to its stream.
   */
  end: (err?: unknown) => void = noEnd;

  constructor(endpoint: TraceRecord['endpoint']) {
    this.requestId = newRequestId();
    this.trace = {
      endpoint, provider: null, model: null, requested_model: null, route_reason: null,
      prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, cost_usd: 0, status_code: 0, error_code: null,
      redactions: 0, streamed: false, ttfb_ms: null, stream_aborted: false, disclosed_bytes: 0, dry_run: false,
      attempts: null, fallback_from: null,
    };
  }

  elapsedMs(): number {
    return performance.now() - this.startedAt;
  }

  /** The trace row, or undefined when the caller never authenticated: those belong to no organisation. */
  toTrace(): TraceRecord | undefined {
    if (!this.key) return undefined;
    const t = this.trace;
    // Every field spelled out: an object spread of `trace`, whose fields change type
    // as the stages fill them in, took V8's slow path at about 20 µs a request.
    return {
      request_id: this.requestId, organization_id: this.key.organization_id, api_key_id: this.key.id,
      endpoint: t.endpoint, provider: t.provider, model: t.model, requested_model: t.requested_model, route_reason: t.route_reason,
      latency_ms: Math.round(this.elapsedMs()), prompt_tokens: t.prompt_tokens, completion_tokens: t.completion_tokens,
      total_tokens: t.total_tokens, cost_usd: t.cost_usd, status_code: t.status_code, error_code: t.error_code,
      redactions: t.redactions, streamed: t.streamed, ttfb_ms: t.ttfb_ms, stream_aborted: t.stream_aborted,
      disclosed_bytes: t.disclosed_bytes, dry_run: t.dry_run, created_at: this.startedEpoch,
      payload: t.payload === undefined ? undefined : payloadText(t.payload),
      attempts: t.attempts ?? null, fallback_from: t.fallback_from ?? null,
    };
  }
}
