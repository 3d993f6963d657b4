// Per-request state: the id used in every response, trace and payload archive,
// the start time, and the trace fields each stage fills in as it goes.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { TraceRecord } from '../domain.js';
import type { KeyRecord } from '../store/api-keys-repo.js';

export class RequestContext {
  readonly requestId: string;
  readonly startedAt = performance.now();
  readonly startedEpoch = Date.now();
  key: KeyRecord | undefined;
  trace: Omit<TraceRecord, 'request_id' | 'organization_id' | 'api_key_id' | 'latency_ms' | 'created_at'>;

  constructor(endpoint: TraceRecord['endpoint']) {
    // Hex UUID without dashes: unique without coordination between instances.
    this.requestId = `req_${randomUUID().replaceAll('-', '')}`;
    this.trace = {
      endpoint, provider: null, model: null, requested_model: null, route_reason: null,
      prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, cost_usd: 0, status_code: 0, error_code: null,
      redactions: 0, streamed: false, ttfb_ms: null, stream_aborted: false, disclosed_bytes: 0, dry_run: false,
    };
  }

  elapsedMs(): number {
    return performance.now() - this.startedAt;
  }

  /** The trace row, or undefined when the caller never authenticated: those belong to no organisation. */
  toTrace(): TraceRecord | undefined {
    if (!this.key) return undefined;
    return {
      ...this.trace,
      request_id: this.requestId,
      organization_id: this.key.organization_id,
      api_key_id: this.key.id,
      latency_ms: Math.round(this.elapsedMs()),
      created_at: this.startedEpoch,
    };
  }
}
