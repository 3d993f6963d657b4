// Overview: GET /v1/usage for the chosen range, as figures, charts and tables.
import { useMemo, useState } from 'preact/hooks';
import { api, qs } from './api.js';
import { Chart, type Line } from './chart.js';
import { int, ms, pct, usd } from './format.js';
import { Empty, ErrorBox, Loading, useLoad } from './ui.js';

interface Metrics {
  requests: number; errors: number; error_rate: number; prompt_tokens: number; completion_tokens: number; total_tokens: number;
  cost_usd: number; latency_p50_ms: number | null; latency_p95_ms: number | null; ttfb_p50_ms: number | null; ttfb_p95_ms: number | null;
}
interface Point extends Metrics { start: string }
export interface Usage {
  totals: Metrics;
  series: Point[];
  breakdowns: { model: Array<Metrics & { model: string | null }>; provider: Array<Metrics & { provider: string | null }>; key: Array<Metrics & { key: string; name: string | null }> } | null;
  groups?: Array<{ value: string | null; name?: string | null; series: Point[] }>;
}

const RANGES = ['1h', '24h', '7d', '30d'] as const;
const PALETTE = ['--c1', '--c2', '--c3', '--c4', '--c5', '--c6'];

function Breakdown({ title, rows }: { title: string; rows: Array<Metrics & { label: string }> }) {
  return (
    <section class="card">
      <h3>{title}</h3>
      {rows.length === 0 ? <p class="muted">Nothing in this range.</p> : (
        <div class="scroll"><table>
          <thead><tr><th scope="col">{title.replace('By ', '')}</th><th scope="col" class="num">Requests</th><th scope="col" class="num">Errors</th><th scope="col" class="num">p95</th><th scope="col" class="num">Tokens</th><th scope="col" class="num">Cost</th></tr></thead>
          <tbody>{rows.map((r) => (
            <tr key={r.label}><td>{r.label}</td><td class="num">{int(r.requests)}</td><td class="num">{pct(r.error_rate)}</td><td class="num">{ms(r.latency_p95_ms)}</td><td class="num">{int(r.total_tokens)}</td><td class="num">{usd(r.cost_usd)}</td></tr>
          ))}</tbody>
        </table></div>
      )}
    </section>
  );
}

export function Overview({ theme }: { theme: string }) {
  const [range, setRange] = useState<(typeof RANGES)[number]>('24h');
  const [split, setSplit] = useState('');
  const usage = useLoad(() => api<Usage>('GET', `/v1/usage${qs({ range, group_by: split })}`), [range, split]);
  const u = usage.data;
  const times = useMemo(() => (u ? u.series.map((p) => Date.parse(p.start) / 1000) : []), [u]);
  const charts = useMemo(() => {
    if (!u) return [];
    const s = u.series;
    const requests: Line[] = u.groups?.length
      ? u.groups.map((g, i) => ({ label: g.name ?? g.value ?? '(none)', values: g.series.map((p) => p.requests), color: PALETTE[i % PALETTE.length]! }))
      : [{ label: 'requests', values: s.map((p) => p.requests), color: '--c1' }, { label: 'errors', values: s.map((p) => p.errors), color: '--bad' }];
    return [
      { title: split ? `Requests by ${split}` : 'Requests and errors', lines: requests },
      { title: 'Latency and TTFB', lines: [
        { label: 'p50', values: s.map((p) => p.latency_p50_ms), color: '--c1', format: ms },
        { label: 'p95', values: s.map((p) => p.latency_p95_ms), color: '--c2', format: ms },
        { label: 'TTFB p50', values: s.map((p) => p.ttfb_p50_ms), color: '--c3', format: ms },
      ] },
      { title: 'Tokens', lines: [
        { label: 'prompt', values: s.map((p) => p.prompt_tokens), color: '--c1' },
        { label: 'completion', values: s.map((p) => p.completion_tokens), color: '--c2' },
      ] },
      { title: 'Cost', lines: [{ label: 'USD', values: s.map((p) => p.cost_usd), color: '--c4', format: usd }] },
    ];
  }, [u, split]);

  return (
    <div>
      <div class="toolbar">
        <h1>Overview</h1>
        <div role="group" aria-label="Range" class="seg">
          {RANGES.map((r) => <button type="button" key={r} aria-pressed={r === range} onClick={() => setRange(r)}>{r}</button>)}
        </div>
        <label>Split requests by{' '}
          <select value={split} onChange={(e) => setSplit((e.target as HTMLSelectElement).value)}>
            <option value="">nothing</option><option value="model">model</option><option value="provider">provider</option><option value="key">key</option>
          </select>
        </label>
      </div>
      {usage.error ? <ErrorBox error={usage.error} retry={usage.reload} /> : !u ? <Loading /> : (
        <>
          <div class="figures">
            <div class="figure"><span>Requests</span><strong data-testid="total-requests">{int(u.totals.requests)}</strong></div>
            <div class="figure"><span>Error rate</span><strong>{pct(u.totals.error_rate)}</strong></div>
            <div class="figure"><span>Latency p50 / p95</span><strong>{ms(u.totals.latency_p50_ms)} / {ms(u.totals.latency_p95_ms)}</strong></div>
            <div class="figure"><span>TTFB p50</span><strong>{ms(u.totals.ttfb_p50_ms)}</strong></div>
            <div class="figure"><span>Tokens</span><strong>{int(u.totals.total_tokens)}</strong></div>
            <div class="figure"><span>Cost</span><strong data-testid="total-cost">{usd(u.totals.cost_usd)}</strong></div>
          </div>
          {u.totals.requests === 0 ? (
            <Empty>No requests in the last {range}. Send one from the <a href="#/playground">Playground</a>, or point an OpenAI SDK at <code>{location.origin}/v1</code> with one of your keys.</Empty>
          ) : (
            <>
              <div class="charts">{charts.map((c) => <Chart key={c.title} title={c.title} times={times} lines={c.lines} theme={theme} />)}</div>
              {u.breakdowns && (
                <div class="breakdowns">
                  <Breakdown title="By model" rows={u.breakdowns.model.map((r) => ({ ...r, label: r.model ?? '(none)' }))} />
                  <Breakdown title="By provider" rows={u.breakdowns.provider.map((r) => ({ ...r, label: r.provider ?? '(none)' }))} />
                  <Breakdown title="By key" rows={u.breakdowns.key.map((r) => ({ ...r, label: r.name ? `${r.name} (${r.key})` : r.key }))} />
                </div>
              )}
            </>
          )}
        </>
      )}
    </div>
  );
}
