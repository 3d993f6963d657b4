// The trace pipeline's public surface, for the app wiring and the Traces API.
export { TracePipeline, type TracePipelineOptions } from './pipeline.js';
export { traceSettingsSchema, orgTraceSchema, resolvePayloadSecret, type TraceSettings, type OrgTraceSettings } from './config-schema.js';
export { listTraces, getTrace, LIMIT_DEFAULT, LIMIT_MAX, type TraceView, type ListTracesQuery, type TraceReadOptions } from './query.js';
export { fetchPayload } from './payload-archive.js';
export { signPayloadUrl, verifyPayloadSignature, type SignatureCheck } from './signed-url.js';
export type { TraceLogger, TraceMetrics } from './metrics.js';
