// Traces: the newest first with filters and cursor paging, refreshed live on
// the first page; a trace's detail shows every field and the payload archive.
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, qs } from './api.js';
import { int, ms, time, usd } from './format.js';
import { Empty, ErrorBox, Loading, useLoad } from './ui.js';

export interface Trace {
  request_id: string; api_key_id: string; provider: string | null; model: string | null; requested_model: string | null; route_reason: string | null;
  latency_ms: number; ttfb_ms: number | null; total_tokens: number; cost_usd: number; status_code: number; streamed: boolean;
  stream_aborted: boolean; created_at: string; payload_url?: string; [field: string]: unknown;
}

const EMPTY = { status: '', provider: '', model: '', key: '', streamed: '', aborted: '' };

export function Traces() {
  const [draft, setDraft] = useState(EMPTY);
  const [filters, setFilters] = useState(EMPTY);
  const [cursors, setCursors] = useState<string[]>([]);
  const [live, setLive] = useState(true);
  const after = cursors.at(-1);
  const page = useLoad(() => api<{ data: Trace[]; has_more: boolean }>('GET', `/v1/traces${qs({ ...filters, limit: 25, starting_after: after })}`), [filters, after]);
  useEffect(() => {
    if (!live || after) return;
    const t = setInterval(page.reload, 3000);
    return () => clearInterval(t);
  }, [live, after, page.reload]);
  const field = (name: keyof typeof EMPTY, label: string, numeric = false) => (
    <label>{label}<input name={name} inputMode={numeric ? 'numeric' : 'text'} value={draft[name]} onInput={(e) => setDraft({ ...draft, [name]: (e.target as HTMLInputElement).value })} /></label>
  );
  const tri = (name: 'streamed' | 'aborted', label: string) => (
    <label>{label}<select name={name} value={draft[name]} onChange={(e) => setDraft({ ...draft, [name]: (e.target as HTMLSelectElement).value })}>
      <option value="">any</option><option value="true">yes</option><option value="false">no</option></select></label>
  );
  return (
    <div>
      <div class="toolbar"><h1>Traces</h1>
        <label class="inline"><input type="checkbox" checked={live} onChange={(e) => setLive((e.target as HTMLInputElement).checked)} /> Live</label>
      </div>
      <form class="filters" onSubmit={(e) => { e.preventDefault(); setCursors([]); setFilters(draft); }}>
        {field('status', 'Status', true)}{field('provider', 'Provider')}{field('model', 'Model')}{field('key', 'Key id')}
        {tri('streamed', 'Streamed')}{tri('aborted', 'Aborted')}
        <button type="submit">Apply</button>
        <button type="button" onClick={() => { setDraft(EMPTY); setFilters(EMPTY); setCursors([]); }}>Clear</button>
      </form>
      {page.error ? <ErrorBox error={page.error} retry={page.reload} /> : !page.data ? <Loading /> : page.data.data.length === 0 ? (
        <Empty>No traces{Object.values(filters).some(Boolean) ? ' match these filters; clear them to see every trace' : ' yet: every request through the gateway leaves one here within a second. Try the Playground'}.</Empty>
      ) : (
        <>
          <div class="scroll"><table class="traces">
            <thead><tr><th scope="col">Time</th><th scope="col">Status</th><th scope="col">Model</th><th scope="col">Provider</th><th scope="col">Key</th><th scope="col" class="num">Latency</th><th scope="col" class="num">Tokens</th><th scope="col" class="num">Cost</th><th scope="col">Stream</th></tr></thead>
            <tbody>{page.data.data.map((t) => (
              <tr key={t.request_id} data-request-id={t.request_id}>
                <td><a href={`#/traces/${encodeURIComponent(t.request_id)}`}>{time(t.created_at)}</a></td>
                <td class={t.status_code >= 400 ? 'bad' : 'ok'}>{t.status_code}</td>
                <td>{t.model ?? '–'}</td><td>{t.provider ?? '–'}</td><td><code>{t.api_key_id}</code></td>
                <td class="num">{ms(t.latency_ms)}</td><td class="num">{int(t.total_tokens)}</td><td class="num" data-testid="trace-cost">{usd(t.cost_usd)}</td>
                <td>{t.streamed ? (t.stream_aborted ? 'aborted' : 'yes') : 'no'}</td>
              </tr>
            ))}</tbody>
          </table></div>
          <div class="row">
            <button type="button" disabled={!cursors.length} onClick={() => setCursors([])}>Newest</button>
            <button type="button" disabled={!cursors.length} onClick={() => setCursors(cursors.slice(0, -1))}>← Newer</button>
            <button type="button" disabled={!page.data.has_more} onClick={() => setCursors([...cursors, page.data!.data.at(-1)!.request_id])}>Older →</button>
          </div>
        </>
      )}
    </div>
  );
}

interface Payload { request?: unknown; response?: unknown }

const json = (v: unknown): string => JSON.stringify(v, null, 2);

/**
 * One trace by id. The writer stores a trace within about a second of its response, so a link
 * followed at once (the playground's request_id) can arrive first: a 404 is retried for a few seconds.
 */
async function loadTrace(id: string): Promise<Trace> {
  // The browser reads `/v1/traces/.` (or `%2E`) as the list itself, which would show as if it were one trace.
  if (id === '' || id === '.' || id === '..') throw new ApiError(404, 'not_found', 'No such trace.', null);
  const deadline = Date.now() + 3000;
  for (;;) {
    try {
      return await api<Trace>('GET', `/v1/traces/${encodeURIComponent(id)}`);
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 404) || Date.now() > deadline) throw err;
    }
    await new Promise((ok) => setTimeout(ok, 250));
  }
}

export function TraceDetail({ id }: { id: string }) {
  const trace = useLoad(() => loadTrace(id), [id]);
  const payload = useLoad(async () => {
    const url = trace.data?.payload_url;
    if (!url) return undefined;
    // The signed link is the credential: no bearer key is sent with it.
    const res = await fetch(url);
    if (!res.ok) throw new Error(`The payload link answered ${res.status}; reload the trace for a fresh link.`);
    return (await res.json()) as Payload;
  }, [trace.data]);
  if (trace.error) {
    const missing = trace.error instanceof ApiError && trace.error.status === 404;
    return <ErrorBox error={trace.error} retry={trace.reload}
      hint={missing ? 'Only your organisation\'s traces are shown, for traces.retention_days. Check the id, or find the request in the Traces list.' : undefined} />;
  }
  if (!trace.data) return <Loading />;
  const t = trace.data;
  return (
    <div>
      <div class="toolbar"><h1>Trace <code>{t.request_id}</code></h1><a href="#/traces">← All traces</a></div>
      <dl class="fields">{Object.entries(t).filter(([k]) => k !== 'payload_url').map(([k, v]) => (
        <div key={k}><dt>{k}</dt><dd data-field={k}>{v === null ? '–' : k === 'cost_usd' ? usd(v as number) : typeof v === 'object' ? JSON.stringify(v) : String(v)}</dd></div>
      ))}</dl>
      <h2>Payload</h2>
      {!t.payload_url ? <p class="muted">No payload archive: this organisation does not store payloads (<code>store_payloads</code> in the config).</p>
        : payload.error ? <ErrorBox error={payload.error} retry={payload.reload} /> : !payload.data ? <Loading /> : (
          <div class="two">
            <section class="card"><h3>Request, as sent upstream (after redaction)</h3><pre class="code" data-testid="payload-request">{json(payload.data.request)}</pre></section>
            <section class="card"><h3>Response</h3><pre class="code" data-testid="payload-response">{json(payload.data.response)}</pre></section>
          </div>
        )}
    </div>
  );
}
