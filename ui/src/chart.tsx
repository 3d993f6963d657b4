// A uPlot line chart sized to its container. uPlot draws on a canvas and is
// about 50 KB; its colours come from the page's CSS variables, so the charts
// follow the light and dark themes.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

export interface Line { label: string; values: Array<number | null>; color: string; format?: (v: number) => string }

function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';
}

export function Chart({ title, times, lines, theme }: { title: string; times: number[]; lines: Line[]; theme: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const axis = { stroke: cssVar('--muted'), grid: { stroke: cssVar('--grid'), width: 1 }, ticks: { stroke: cssVar('--grid') } };
    const fmt = lines[0]?.format;
    const plot = new uPlot({
      width: Math.max(280, el.clientWidth),
      height: 200,
      series: [{}, ...lines.map((l) => ({ label: l.label, stroke: cssVar(l.color), width: 2, ...(l.format ? { value: (_u: uPlot, v: number | null) => (v === null ? '–' : l.format!(v)) } : {}) }))],
      axes: [axis, { ...axis, size: 80, ...(fmt ? { values: (_u: uPlot, vals: number[]) => vals.map((v) => fmt(v)) } : {}) }],
      scales: { x: { time: true } },
      legend: { live: true },
    }, [times, ...lines.map((l) => l.values)] as uPlot.AlignedData, el);
    const ro = new ResizeObserver(() => plot.setSize({ width: Math.max(280, el.clientWidth), height: 200 }));
    ro.observe(el);
    return () => { ro.disconnect(); plot.destroy(); };
  }, [times, lines, theme]);
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <div ref={box} role="img" aria-label={`${title} over time`} />
    </figure>
  );
}
