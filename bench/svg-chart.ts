// A dependency-free SVG of latency percentiles: one panel per scenario, one
// line per target, on a log scale so p50 and p99.9 fit the same axis.
interface Row { scenario: string; target: string; percentiles?: Record<string, number> }

const COLOURS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f'];
const esc = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

export function latencyChart(rows: Row[]): string {
  const scenarios = [...new Set(rows.map((r) => r.scenario))];
  const targets = [...new Set(rows.map((r) => r.target))];
  const W = 520;
  const H = 260;
  const pad = { l: 56, r: 16, t: 28, b: 36 };
  const panels = scenarios.map((sc, i) => {
    const mine = rows.filter((r) => r.scenario === sc);
    const labels = Object.keys(mine[0]?.percentiles ?? {});
    const values = mine.flatMap((r) => Object.values(r.percentiles ?? {})).map((v) => Math.max(v, 0.1));
    const lo = Math.log10(Math.min(...values, 1));
    const hi = Math.log10(Math.max(...values, 10));
    const x = (j: number) => pad.l + (j * (W - pad.l - pad.r)) / Math.max(1, labels.length - 1);
    const y = (v: number) => pad.t + ((hi - Math.log10(Math.max(v, 0.1))) * (H - pad.t - pad.b)) / (hi - lo || 1);
    const lines = mine.map((r) => {
      const c = COLOURS[targets.indexOf(r.target) % COLOURS.length];
      const pts = labels.map((l, j) => `${x(j).toFixed(1)},${y(r.percentiles![l]!).toFixed(1)}`).join(' ');
      return `<polyline fill="none" stroke="${c}" stroke-width="2" points="${pts}"><title>${esc(r.target)}</title></polyline>`;
    }).join('');
    const ticks = [];
    for (let e = Math.floor(lo); e <= Math.ceil(hi); e++) {
      const v = 10 ** e;
      ticks.push(`<line x1="${pad.l}" x2="${W - pad.r}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/><text x="${pad.l - 6}" y="${y(v) + 4}" text-anchor="end" font-size="11">${v} ms</text>`);
    }
    const xl = labels.map((l, j) => `<text x="${x(j)}" y="${H - pad.b + 16}" text-anchor="middle" font-size="11">${esc(l)}</text>`).join('');
    return `<g transform="translate(${(i % 2) * W},${Math.floor(i / 2) * H})"><text x="${pad.l}" y="18" font-size="13" font-weight="bold">${esc(sc)}</text>${ticks.join('')}${xl}${lines}</g>`;
  });
  const legendY = Math.ceil(scenarios.length / 2) * H;
  const legend = targets.map((t, i) => `<g transform="translate(${16 + i * 130},${legendY + 16})"><rect width="14" height="4" y="-6" fill="${COLOURS[i % COLOURS.length]}"/><text x="20" font-size="12">${esc(t)}</text></g>`).join('');
  const width = Math.min(2, scenarios.length) * W;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${legendY + 32}" font-family="sans-serif"><rect width="100%" height="100%" fill="#fff"/>${panels.join('')}${legend}</svg>\n`;
}
