// Budget periods: a UTC day or a UTC month. The tag names the period in
// counter keys, so a new period starts from zero without any reset job.
export type Period = 'day' | 'month';

export interface PeriodWindow {
  tag: string;
  startMs: number;
  endMs: number;
}

const cache: Record<Period, PeriodWindow | undefined> = { day: undefined, month: undefined };

/** The period containing `now`; cached until it ends, so the hot path allocates nothing. */
export function periodOf(period: Period, now: number): PeriodWindow {
  const hit = cache[period];
  if (hit && now >= hit.startMs && now < hit.endMs) return hit;
  const d = new Date(now);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  const w = period === 'day'
    ? { tag: `d${d.toISOString().slice(0, 10)}`, startMs: Date.UTC(y, m, d.getUTCDate()), endMs: Date.UTC(y, m, d.getUTCDate() + 1) }
    : { tag: `m${d.toISOString().slice(0, 7)}`, startMs: Date.UTC(y, m, 1), endMs: Date.UTC(y, m + 1, 1) };
  cache[period] = w;
  return w;
}

/** Counters outlive their period by a day, then expire by themselves. */
export const spendTtlMs = (w: PeriodWindow, now: number): number => w.endMs - now + 86_400_000;
