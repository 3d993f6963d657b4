// Latency and TTFB percentiles from the rollups' fixed histograms. Bucket i
// holds values in [BOUNDS[i-1], BOUNDS[i]) (the first starts at 0, the last is
// unbounded); these bounds must equal sluice_usage_bounds() in migration 006.
// A percentile is interpolated linearly inside its bucket, so it is an estimate
// good to the bucket's width; the last bucket reads as its lower bound (40 s).
export const BOUNDS = [10, 25, 50, 100, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000, 7500, 10000, 20000, 40000] as const;
export const HIST_BUCKETS = BOUNDS.length + 1;

export function percentile(hist: readonly number[], p: number): number | null {
  let total = 0;
  for (const c of hist) total += c;
  if (total === 0) return null;
  const target = p * total;
  let before = 0;
  for (let i = 0; i < hist.length; i++) {
    const c = hist[i]!;
    if (c > 0 && before + c >= target) {
      const lo = i === 0 ? 0 : BOUNDS[i - 1]!;
      if (i >= BOUNDS.length) return lo;
      const hi = BOUNDS[i]!;
      return Math.round((lo + ((hi - lo) * (target - before)) / c) * 10) / 10;
    }
    before += c;
  }
  return BOUNDS[BOUNDS.length - 1]!;
}
