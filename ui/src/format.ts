// Number and time formatting shared by the pages.
export const int = (n: number | null | undefined): string => (n === null || n === undefined ? '–' : Math.round(n).toLocaleString('en'));

export function usd(n: number | null | undefined): string {
  if (n === null || n === undefined) return '–';
  if (n === 0) return '$0';
  return n < 0.01 ? `$${n.toPrecision(3)}` : `$${n.toFixed(n < 100 ? 4 : 2)}`;
}

export const ms = (n: number | null | undefined): string => (n === null || n === undefined ? '–' : n >= 1000 ? `${(n / 1000).toFixed(2)} s` : `${Math.round(n)} ms`);
export const pct = (n: number): string => `${(n * 100).toFixed(n < 0.01 && n > 0 ? 2 : 1)}%`;
export const time = (iso: string | null | undefined): string => (iso ? new Date(iso).toLocaleString() : '–');
