// A uPlot line chart sized to its container. uPlot draws on a canvas and is
// about 50 KB; its colours come from the page's CSS variables, so the charts
// follow the light and dark themes.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

export interface Line { label: string; values: Array<number | null>; color: string; format?: (v: number) => string }

function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';
}

/**
 * The y axis's width from its widest tick label: a fixed width clips long
 * labels ($0.0000200) at the canvas edge and wastes room on short ones.
 */
function yAxisSize(u: uPlot, values: string[] | null, axisIdx: number, cycleNum: number): number {
  const axis = u.axes[axisIdx] as uPlot.Axis & { _size?: number };
  // uPlot calls this again while the layout settles; a later pass keeps the first answer so it converges.
  if (cycleNum > 1 && axis._size) return axis._size;
  if (!values?.length) return 50;
  // By now uPlot holds the axis font as [css font scaled by pxRatio, px size].
  u.ctx.font = (axis.font as unknown as [string])[0];
  const widest = Math.max(...values.map((v) => (v == null ? 0 : u.ctx.measureText(String(v)).width))) / uPlot.pxRatio;
  return Math.ceil(widest + (axis.ticks?.size ?? 10) + (axis.gap ?? 5) + 8);
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
      axes: [axis, { ...axis, size: yAxisSize, ...(fmt ? { values: (_u: uPlot, vals: number[]) => vals.map((v) => fmt(v)) } : {}) }],
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
