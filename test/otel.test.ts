// OpenTelemetry export: with telemetry.otlp set, every traced request becomes
// one span, posted as OTLP/HTTP JSON to a collector (here a node:http receiver
// on port 0), carrying the GenAI semantic-convention attributes, and agreeing
// with the trace record of the same request.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildConfig } from '../src/config/load-config.js';
import { genAiSpan } from '../src/telemetry/genai-span.js';
import { tracesUrl } from '../src/telemetry/otlp-exporter.js';
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from './mocks/openai-mock.js';
import { startGateway, type TestGateway } from './helpers/gateway.js';
import { call, chatBody, MGMT_UPSTREAM_ENV, routingConfig } from './helpers/management.js';
import { stopTestPostgres } from './helpers/pg.js';
import { sampleTrace } from './helpers/trace-fixtures.js';

after(stopTestPostgres);

interface OtlpValue { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean }
interface OtlpSpan { name: string; kind: number; startTimeUnixNano: string; endTimeUnixNano: string; attributes: Array<{ key: string; value: OtlpValue }>; status?: { code?: number } }

/** A collector that keeps every span it is sent, with its resource attributes. */
function startReceiver(): Promise<{ server: Server; url: string; spans: Array<OtlpSpan & { resource: Record<string, unknown> }>; contentTypes: string[]; headers: Array<Record<string, unknown>> }> {
  const spans: Array<OtlpSpan & { resource: Record<string, unknown> }> = [];
  const contentTypes: string[] = [];
  const headers: Array<Record<string, unknown>> = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => { body += c; });
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') { res.writeHead(404).end(); return; }
      contentTypes.push(String(req.headers['content-type']));
      headers.push(req.headers);
      const doc = JSON.parse(body) as { resourceSpans: Array<{ resource: { attributes: OtlpSpan['attributes'] }; scopeSpans: Array<{ spans: OtlpSpan[] }> }> };
      for (const rs of doc.resourceSpans) {
        const resource = flat(rs.resource.attributes);
        for (const ss of rs.scopeSpans) for (const s of ss.spans) spans.push({ ...s, resource });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return new Promise((ok) => server.listen(0, '127.0.0.1', () => ok({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, contentTypes, headers })));
}

function flat(attrs: OtlpSpan['attributes']): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of attrs) {
    out[key] = value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : undefined) ?? value.doubleValue ?? value.boolValue;
  }
  return out;
}

describe('OTLP export of one GenAI span per request', () => {
  let mock: OpenAIMock;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let gw: TestGateway;
  let key: string;

  before(async () => {
    mock = await startOpenAIMock();
    receiver = await startReceiver();
    const base = routingConfig(mock.url);
    gw = await startGateway({
      env: { [MGMT_UPSTREAM_ENV]: OPENAI_MOCK_KEY },
      config: {
        ...base,
        models: [...base.models!, { id: 'up-embed', provider: 'up', type: 'embedding', context_window: 8_000, pricing: { prompt: 0.02, completion: 0 } }],
        organizations: [{ id: 'acme', models: ['up-dear', 'up-cheap', 'off-model', 'up-embed'] }],
        telemetry: { otlp: { endpoint: receiver.url, headers: { 'x-collector-token': 't0ken' }, service_name: 'sluice-test' } },
      },
    });
    key = await gw.key('acme', 'user');
  });
  after(async () => {
    await gw?.close();
    await mock?.close();
    receiver?.server.close();
  });

  test('chat, embeddings and an error each give one span that agrees with the trace; a model listing gives none', async () => {
    const ok = await call(gw.url, key, 'POST', '/v1/chat/completions', chatBody('cheap', 'three little words'));
    assert.equal(ok.status, 200);
    const emb = await call(gw.url, key, 'POST', '/v1/embeddings', { model: 'up-embed', input: ['hello', 'world'] });
    assert.equal(emb.status, 200);
    const bad = await call(gw.url, key, 'POST', '/v1/chat/completions', chatBody('off-model'));
    assert.ok(bad.status >= 400, `the unconfigured provider is an error (${bad.status})`);
    // A model listing is traced, but it is no model call: it gives no span.
    const listing = await call(gw.url, key, 'GET', '/v1/models');
    assert.equal(listing.status, 200);
    await gw.traces.waitFor(listing.headers.get('x-request-id')!);
    const ids = [ok, emb, bad].map((r) => r.headers.get('x-request-id')!);
    const traces = await Promise.all(ids.map((id) => gw.traces.waitFor(id)));

    // Closing flushes the batch processor: every span is at the receiver afterwards.
    await gw.close();
    gw = undefined as unknown as TestGateway;
    assert.equal(receiver.spans.length, 3, JSON.stringify(receiver.spans.map((s) => s.name)));
    assert.ok(receiver.contentTypes.every((c) => c.startsWith('application/json')), receiver.contentTypes.join());
    assert.equal(receiver.headers[0]!['x-collector-token'], 't0ken');
    const byId = new Map(receiver.spans.map((s) => [flat(s.attributes)['sluice.request_id'], s]));

    const chat = byId.get(ids[0])!;
    const a = flat(chat.attributes);
    assert.equal(chat.name, 'chat cheap');
    assert.equal(chat.kind, 3, 'SPAN_KIND_CLIENT');
    assert.equal(chat.resource['service.name'], 'sluice-test');
    assert.equal(a['gen_ai.operation.name'], 'chat');
    assert.equal(a['gen_ai.provider.name'], 'openai');
    assert.equal(a['gen_ai.system'], 'openai');
    assert.equal(a['gen_ai.request.model'], 'cheap');
    assert.equal(a['gen_ai.response.model'], traces[0]!.model);
    assert.equal(a['gen_ai.response.model'], 'up-cheap');
    assert.ok(traces[0]!.prompt_tokens > 0);
    assert.equal(a['gen_ai.usage.input_tokens'], traces[0]!.prompt_tokens);
    assert.equal(a['gen_ai.usage.output_tokens'], traces[0]!.completion_tokens);
    assert.equal(a['http.response.status_code'], 200);
    assert.equal(a['sluice.request_id'], ids[0]);
    assert.equal(chat.status?.code ?? 0, 0, 'unset on success');
    assert.equal(a['error.type'], undefined);
    const durNs = BigInt(chat.endTimeUnixNano) - BigInt(chat.startTimeUnixNano);
    assert.equal(Number(durNs / 1_000_000n), traces[0]!.latency_ms, 'the span lasts as long as the trace says');
    assert.equal(Number(BigInt(chat.startTimeUnixNano) / 1_000_000n), traces[0]!.created_at);

    const e = flat(byId.get(ids[1])!.attributes);
    assert.equal(byId.get(ids[1])!.name, 'embeddings up-embed');
    assert.equal(e['gen_ai.operation.name'], 'embeddings');
    assert.equal(e['gen_ai.usage.input_tokens'], traces[1]!.prompt_tokens);

    const failed = byId.get(ids[2])!;
    const f = flat(failed.attributes);
    assert.equal(failed.status?.code, 2, 'STATUS_CODE_ERROR');
    assert.equal(f['http.response.status_code'], bad.status);
    assert.equal(f['error.type'], bad.body.error.code);
    assert.equal(f['error.type'], traces[2]!.error_code);
  });
});

test('the span mapping: provider kinds, stream cuts and what is left out', () => {
  const kinds = (p: string) => ({ claude: 'anthropic', g: 'gemini' } as Record<string, string>)[p];
  const s = genAiSpan(sampleTrace({ provider: 'g', model: 'gemini-2.5-flash', requested_model: null, stream_aborted: true, status_code: 200, error_code: null, prompt_tokens: 0, completion_tokens: 0 }), kinds);
  assert.equal(s.attributes['gen_ai.provider.name'], 'gcp.gemini');
  assert.equal(s.name, 'chat gemini-2.5-flash');
  assert.equal(s.error, true, 'a stream cut after it began is an error');
  assert.equal(s.attributes['error.type'], '200');
  assert.equal(s.attributes['gen_ai.usage.input_tokens'], undefined);
  assert.equal(genAiSpan(sampleTrace({ provider: 'claude' }), kinds).attributes['gen_ai.provider.name'], 'anthropic');
});

test('endpoint and config validation', () => {
  assert.equal(tracesUrl('http://collector:4318'), 'http://collector:4318/v1/traces');
  assert.equal(tracesUrl('http://collector:4318/'), 'http://collector:4318/v1/traces');
  assert.equal(tracesUrl('https://x.example/otlp/v1/traces'), 'https://x.example/otlp/v1/traces');
  assert.equal(buildConfig({}).telemetry.otlp, undefined, 'off by default');
  assert.equal(buildConfig({ telemetry: { otlp: { endpoint: 'http://c:4318' } } }).telemetry.otlp?.service_name, 'sluice');
  assert.throws(() => buildConfig({ telemetry: { otlp: { endpoint: 'not a url' } } }), /telemetry\.otlp\.endpoint/);
  assert.throws(() => buildConfig({ telemetry: { otlp: { endpoint: 'http://c', extra: 1 } } }), /telemetry\.otlp/);
});
