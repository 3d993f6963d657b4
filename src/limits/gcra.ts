// The generic cell rate algorithm over a one-minute window. A limit of L per
// minute lets one unit in every T = 60000/L ms, with a burst of up to L. The
// whole state is one number, the theoretical arrival time (TAT): a request of
// `cost` units is admitted when TAT + cost*T - 60000 <= now, and then moves
// TAT on by cost*T. The same arithmetic runs in process here and in Redis in
// redis-scripts.ts, so an instance that falls back to memory decides alike.
export const WINDOW_MS = 60_000;

export interface GcraStep {
  /** 0 when admitted, else how long until it would be. */
  waitMs: number;
  /** TAT after the step (unchanged when refused). */
  tat: number;
}

export function gcra(tat: number, now: number, limit: number, cost: number): GcraStep {
  const base = tat > now ? tat : now;
  const next = base + (WINDOW_MS / limit) * cost;
  const wait = next - WINDOW_MS - now;
  return wait > 0 ? { waitMs: wait, tat: base } : { waitMs: 0, tat: next };
}

/** Units left for an immediate request, given the TAT. */
export function remaining(tat: number, now: number, limit: number): number {
  const used = tat > now ? (tat - now) / (WINDOW_MS / limit) : 0;
  return Math.max(0, Math.floor(limit - used + 1e-9));
}

/** Until the bucket is full again: OpenAI's x-ratelimit-reset-* meaning. */
export function resetMs(tat: number, now: number): number {
  return tat > now ? tat - now : 0;
}

/**
 * OpenAI's duration style (Go's) for the reset headers: `20ms`, `1s`, `6m0s`,
 * `1m30.5s`, `1h0m0s`. Seconds are rounded to tenths before the minutes are
 * split off, so a round-up carries into the minute (until 2026-11-29 59.95 s
 * read `60s` and 119.96 s `1m60s`).
 */
export function duration(ms: number): string {
  const r = Math.ceil(ms);
  if (r < 1000) return `${r}ms`;
  const tenths = Math.round(r / 100);
  const m = Math.floor(tenths / 600);
  const s = `${(tenths - m * 600) / 10}s`;
  if (m < 60) return m ? `${m}m${s}` : s;
  return `${Math.floor(m / 60)}h${m % 60}m${s}`;
}
