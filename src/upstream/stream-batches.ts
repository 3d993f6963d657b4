// A stream's events reach its relay in batches, one per upstream read, pushed
// as they arrive: the relay is an object the exchange calls (a BatchSink), not
// a loop awaiting the next batch. A gateway holds thousands of streams that
// are waiting on their models; a pending read per stream (its promise, its
// resolvers, the suspended frames awaiting it) was garbage made every chunk,
// and what a burst of arriving streams promoted to the old generation before
// it died. A waiting stream now holds its state and nothing else.
import type { StreamEvent } from '../domain.js';
import { GatewayError } from '../errors.js';

/** A sink's answer that ends the stream early (a moderation block, a cut, a caller gone): the upstream is cut too. */
export const STOP = Symbol('stop');

/** What a sink returns: a promise holds the next batch back until it settles (the caller's socket is backpressured). */
export type SinkResult = void | typeof STOP | Promise<void | typeof STOP>;

export interface BatchSink {
  /** One upstream read's events, in order; `last` when the upstream has ended and nothing follows. */
  batch(events: StreamEvent[], last: boolean): SinkResult;
}

export interface StreamBatches {
  /**
   * Feeds every batch to `sink`, once. Resolves true once the stream ended and
   * its last batch was taken, false when the sink stopped it; rejects with what
   * the sink threw.
   */
  pump(sink: BatchSink): Promise<boolean>;
}

/** A whole answer as one batch of events (buffered moderation, the in-process mock). */
export function oneBatch(events: StreamEvent[]): StreamBatches {
  return { pump: (sink) => Promise.resolve(events).then((evs) => sink.batch(evs, true)).then((r) => r !== STOP) };
}

/** About how much memory an event holds: its wire text, or the texts a translator put in it. */
function eventSize(ev: StreamEvent): number {
  if (ev.type === 'event') return ev.raw.length;
  if (ev.type !== 'chunk') return 0;
  if (ev.raw !== undefined) return ev.raw.length;
  let n = 64;
  for (const c of ev.chunk.choices) {
    const d = c.delta;
    if (!d) continue;
    if (typeof d.content === 'string') n += d.content.length;
    if (typeof d.refusal === 'string') n += d.refusal.length;
    if (typeof d.reasoning_content === 'string') n += d.reasoning_content.length;
    if (Array.isArray(d.tool_calls)) for (const t of d.tool_calls) n += t.function?.arguments?.length ?? 0;
  }
  return n;
}

/**
 * Every event of a stream, for buffered moderation, which must see the whole
 * answer before any byte is sent. An error event fails the whole answer; so
 * does an answer over `maxBytes`, since holding it all is what bounds memory.
 */
export async function collectEvents(batches: StreamBatches, maxBytes: number): Promise<StreamEvent[]> {
  const all: StreamEvent[] = [];
  let size = 0;
  await batches.pump({
    batch(events) {
      for (const ev of events) {
        if (ev.type === 'error') throw new GatewayError('upstream_error', ev.message);
        size += eventSize(ev);
        if (size > maxBytes) {
          throw new GatewayError('upstream_error', `The upstream answer is larger than upstream.max_response_bytes (${maxBytes} bytes), the most that buffered moderation holds.`);
        }
        all.push(ev);
      }
    },
  });
  return all;
}
