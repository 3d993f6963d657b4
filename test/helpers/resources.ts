// What a test can measure about its own process: resident memory, open file
// descriptors and sockets. The gateway, its upstream mocks and the clients all
// live in the test process, so growth here bounds the gateway's growth.
import { readdirSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export const MB = 1024 * 1024;

export const rss = (): number => process.memoryUsage.rss();

/** Open file descriptors of this process (sockets, pipes, files). */
export const fdCount = (): number => readdirSync('/proc/self/fd').length;

/** Runs `fn` while sampling RSS every 10 ms; resolves with its result and the peak growth over the RSS at the start. */
export async function peakRssGrowth<T>(fn: () => Promise<T>): Promise<{ result: T; growth: number }> {
  const start = rss();
  let peak = start;
  const timer = setInterval(() => { peak = Math.max(peak, rss()); }, 10);
  try {
    const result = await fn();
    peak = Math.max(peak, rss());
    return { result, growth: peak - start };
  } finally {
    clearInterval(timer);
  }
}

/** Polls `probe` until it returns true or `ms` pass; returns the last answer. */
export async function eventually(probe: () => boolean, ms: number, every = 25): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!probe()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, every));
  }
  return true;
}

/** A full garbage collection, without --expose-gc on the command line: heap figures after it count only what is still referenced. */
export function forceGc(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

export const heapUsed = (): number => process.memoryUsage().heapUsed;
