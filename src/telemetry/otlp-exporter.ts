// Optional OTLP/HTTP export of one span per traced request. Off by default and
// free when off: nothing here is imported unless `telemetry.otlp` is set, and
// then the @opentelemetry packages are loaded with a dynamic import, so a
// deployment that never enables it needs none of them installed.
//
// It wraps the TraceSink: the span is built from the very record that the
// trace pipeline stores, at the moment it is recorded, so the two agree. The
// SDK's batch processor queues spans and sends them in the background; when the
// collector is slow or down, spans beyond its queue are dropped, never the trace.
import type { TraceRecord, TraceSink } from '../domain.js';
import { genAiSpan } from './genai-span.js';

const MODEL_CALLS: ReadonlySet<TraceRecord['endpoint']> = new Set(['chat', 'embeddings', 'responses']);

export interface OtlpSettings {
  endpoint: string;
  headers?: Record<string, string> | undefined;
  service_name: string;
}

export interface OtlpTap {
  /** The sink to hand the pipeline: records the trace in `inner`, then emits the span. */
  readonly sink: TraceSink;
  /** Sends what is queued and stops. */
  close(): Promise<void>;
}

const PACKAGES = '@opentelemetry/api @opentelemetry/sdk-trace-base @opentelemetry/exporter-trace-otlp-http @opentelemetry/resources';

/** `endpoint` is the collector's base URL (http://collector:4318) or the full traces URL. */
export function tracesUrl(endpoint: string): string {
  const u = new URL(endpoint);
  if (!u.pathname.endsWith('/v1/traces')) u.pathname = `${u.pathname.replace(/\/+$/, '')}/v1/traces`;
  return u.toString();
}

export async function startOtlp(settings: OtlpSettings, inner: TraceSink, kindOf: (provider: string) => string | undefined): Promise<OtlpTap> {
  let mods;
  try {
    mods = await Promise.all([
      import('@opentelemetry/api'),
      import('@opentelemetry/sdk-trace-base'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
    ]);
  } catch (err) {
    throw new Error(`telemetry.otlp is set but the OpenTelemetry packages are not installed (npm install ${PACKAGES})`, { cause: err });
  }
  const [api, sdk, otlp, resources] = mods;
  const exporter = new otlp.OTLPTraceExporter({ url: tracesUrl(settings.endpoint), headers: settings.headers ?? {} });
  const provider = new sdk.BasicTracerProvider({
    resource: resources.resourceFromAttributes({ 'service.name': settings.service_name }),
    spanProcessors: [new sdk.BatchSpanProcessor(exporter, { scheduledDelayMillis: 1_000, maxQueueSize: 8_192, maxExportBatchSize: 512 })],
  });
  // Not registered globally: sluice's spans are its own, whatever else the process does with the API.
  const tracer = provider.getTracer('sluice');
  const emit = (t: TraceRecord) => {
    const s = genAiSpan(t, kindOf);
    const span = tracer.startSpan(s.name, { kind: api.SpanKind.CLIENT, startTime: t.created_at, attributes: s.attributes });
    span.setStatus({ code: s.error ? api.SpanStatusCode.ERROR : api.SpanStatusCode.UNSET });
    span.end(t.created_at + t.latency_ms);
  };
  return {
    sink: {
      record(t) {
        inner.record(t);
        // A GenAI span is a model call's: a model listing or a refused path is traced, not a span.
        if (!MODEL_CALLS.has(t.endpoint)) return;
        // The sink must never throw into the request path.
        try { emit(t); } catch { /* a span is advisory */ }
      },
    },
    close: () => provider.shutdown(),
  };
}
