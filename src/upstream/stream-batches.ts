// A stream's events reach its relay in batches, one per upstream read, pushed
// as they arrive: the relay is an object the exchange calls (a BatchSink), not
// a loop awaiting the next batch. A gateway holds thousands of streams that
// are waiting on their models; a pending read per stream (its promise, its
// resolvers, the suspended frames awaiting it) was garbage made every chunk,
// and what a burst of arriving streams promoted to the old generation before
// it died. A waiting stream now holds its state and nothing else.
import { TEXT_MEMBERS, type PassHeaders, type StreamEvent } from '../domain.js';
import { GatewayError } from '../errors.js';
import { inBandFailure } from './upstream-errors.js';

/** A sink's answer that ends the stream early (a moderation block, a cut, a caller gone): the upstream is cut too. */
export const STOP = Symbol('stop');

/** What a sink returns: a promise holds the next batch back until it settles (the caller's socket is backpressured). */
export type SinkResult = void | typeof STOP | Promise<void | typeof STOP>;

export interface BatchSink {
  /** One upstream read's events, in order; `last` when the upstream has ended and nothing follows. */
  batch(events: StreamEvent[], last: boolean): SinkResult;
  /**
   * The stream is over for the sink, called once: `ended` when the upstream
   * ended and its last batch was taken, false when the sink stopped it; `err`
   * is what batch() threw. A callback, not a promise the sink's owner awaits:
   * the chain of promises from a stream's end to its request handler lived as
   * long as the stream did.
   */
  done(ended: boolean, err?: unknown): void;
}

export interface StreamBatches {
  /** Feeds every batch to `sink`, then calls its done(); once. */
  pump(sink: BatchSink): void;
}

/** A stream the upstream accepted. */
export interface StreamOutcome {
  events: StreamBatches;
  /** The body as sent upstream, for the payload archive; '' when nothing archives it (dispatch.ts). */
  sent: string;
  headers: PassHeaders;
}

/** A whole answer as one batch of events (buffered moderation, the in-process mock). */
export function oneBatch(events: StreamEvent[]): StreamBatches {
  return {
    pump(sink) {
      let r: SinkResult;
      try {
        r = sink.batch(events, true);
      } catch (err) {
        return sink.done(false, err);
      }
      if (r instanceof Promise) r.then((x) => sink.done(x !== STOP), (err: unknown) => sink.done(false, err));
      else sink.done(r !== STOP);
    },
  };
}

/** About how much memory an event holds: its wire text, or the texts a translator put in it. */
function eventSize(ev: StreamEvent): number {
  if (ev.type === 'event') return ev.raw?.length ?? 64;
  if (ev.type !== 'chunk') return 0;
  if (ev.raw !== undefined) return ev.raw.length;
  let n = 64;
  for (const c of ev.chunk.choices) {
    const d = c.delta;
    if (!d) continue;
    for (const k of TEXT_MEMBERS) {
      const v = d[k];
      if (typeof v === 'string') n += v.length;
    }
    if (Array.isArray(d.tool_calls)) for (const t of d.tool_calls) n += t?.function?.arguments?.length ?? 0;
  }
  return n;
}

/**
 * Every event of a stream, for buffered moderation, which must see the whole
 * answer before any byte is sent. An error event fails the whole answer; so
 * does an answer over `maxBytes`, since holding it all is what bounds memory.
 */
export function collectEvents(batches: StreamBatches, maxBytes: number): Promise<StreamEvent[]> {
  const all: StreamEvent[] = [];
  let size = 0;
  return new Promise((ok, fail) => batches.pump({
    batch(events) {
      for (const ev of events) {
        if (ev.type === 'error') throw inBandFailure(ev.message, ev.upstream);
        size += eventSize(ev);
        if (size > maxBytes) {
          throw new GatewayError('upstream_error', `The upstream answer is larger than upstream.max_response_bytes (${maxBytes} bytes), the most that buffered moderation holds.`);
        }
        all.push(ev);
      }
    },
    done(_ended, err) {
      if (err === undefined) ok(all);
      else fail(err);
    },
  }));
}
