// A gateway thread's side of the threads model: traces go to the main
// thread's one writer, /metrics asks the main thread for the sum over every
// thread, and a revocation or rule change made here is applied by every other
// thread before the management call that made it answers, so a caller reads
// its own write on whichever thread its next connection lands (Redis pub/sub,
// when configured, reaches other instances; this reaches the threads of this one).
// Without Redis (or while it is down), rate limits and budgets are counted by
// the main thread's one store, which this link carries the calls to.
import type { TraceRecord, TraceSink } from '../domain.js';
import type { StoreCall } from '../limits/store.js';
import { encodeTraceRow } from '../traces/copy-encoder.js';
import { ThreadStore } from '../limits/thread-store.js';
import type { Change, FromThread, MetricsJson, ToThread } from './protocol.js';

/** The way to the main process: a worker thread's parentPort, or a cluster worker's IPC channel. */
export interface MainPort {
  postMessage(m: FromThread): void;
}

export interface ThreadListeners {
  keyRevoked(hash: Buffer): void;
  keyChanged(hash: Buffer): void;
  rulesChanged(): Promise<void>;
  limitsChanged(): Promise<void>;
}

/**
 * How long rows wait in a gateway thread before they are posted, and how many
 * make a message of their own. Each message wakes the main thread (a futex,
 * an eventfd, a context switch); posted once per event-loop turn, as at
 * first, the wake-ups cost a gateway at 16 connections 7-17 % of its CPU per
 * request (less at 64, where each turn carries more rows). 10 ms is small
 * beside the writer's own batch age (200 ms by default).
 */
const FLUSH_MS = 10;
const FLUSH_ROWS = 500;

export class ThreadLink implements TraceSink {
  private lines = '';
  private created: number[] = [];
  private rows: TraceRecord[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly waiting = new Map<number, (text: string) => void>();
  private readonly announcing = new Map<number, () => void>();
  private readonly answers = new Map<number, (value: unknown) => void>();
  private nextId = 0;
  private listeners: ThreadListeners | undefined;
  /** Supplied by the app: this thread's own metrics, for the main thread's sum. */
  collect: () => Promise<MetricsJson> = async () => [];

  /** `gateways`: how many the instance runs, this one included. */
  constructor(private readonly port: MainPort, readonly index: number, readonly gateways = 1) {}

  /**
   * Never blocks: rows are batched for FLUSH_MS (or FLUSH_ROWS) and posted in
   * one message, so a busy thread sends hundreds of rows per postMessage
   * instead of one message per request. A row goes as its COPY line: encoding
   * it here costs about what cloning the object did, and spares the main
   * thread both reading the clone and encoding the row, its share of every
   * request. One with a payload (compressed by the writer) or without an
   * organisation (counted there) goes whole.
   */
  record(trace: TraceRecord): void {
    if (trace.organization_id && trace.payload == null) {
      this.lines += encodeTraceRow(trace);
      this.created.push(trace.created_at);
    } else {
      this.rows.push(trace);
    }
    if (this.created.length + this.rows.length >= FLUSH_ROWS) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), FLUSH_MS).unref();
  }

  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.created.length && !this.rows.length) return;
    const m: FromThread = { type: 'traces', lines: this.lines, created: this.created, rows: this.rows };
    this.lines = '';
    this.created = [];
    this.rows = [];
    this.send(m);
  }

  listen(l: ThreadListeners): void { this.listeners = l; }

  /** Resolves once every other thread has applied `change`. */
  private announce(change: Change): Promise<void> {
    const id = this.nextId++;
    return new Promise((ok) => {
      this.announcing.set(id, ok);
      this.send({ type: 'announce', id, change });
    });
  }

  announceRevoked(hash: Buffer): Promise<void> { return this.announce({ revoked: new Uint8Array(hash) }); }

  announceChanged(hash: Buffer): Promise<void> { return this.announce({ changed: new Uint8Array(hash) }); }

  announceRulesChanged(): Promise<void> { return this.announce({ rules: true }); }

  announceLimitsChanged(): Promise<void> { return this.announce({ limits: true }); }

  /** The process's in-process limiter store, on the main thread, as this thread sees it. */
  limitStore(): ThreadStore {
    return new ThreadStore({
      ask: (call: StoreCall) => new Promise((ok) => {
        const id = this.nextId++;
        this.answers.set(id, ok);
        this.send({ type: 'limits', id, call });
      }),
      tell: (call: StoreCall) => this.send({ type: 'limits', id: -1, call }),
    });
  }

  /** Prometheus text for the whole process: every thread's metrics, summed by the main thread. */
  metricsText(): Promise<string> {
    const id = this.nextId++;
    return new Promise((ok) => {
      this.waiting.set(id, ok);
      this.send({ type: 'metrics-request', id });
    });
  }

  /** Messages from the main thread other than drain. */
  async onMessage(m: ToThread): Promise<void> {
    if (m.type === 'limits-answer') { this.answers.get(m.id)?.(m.value); this.answers.delete(m.id); }
    else if (m.type === 'metrics-collect') this.send({ type: 'metrics-collected', id: m.id, json: await this.collect() });
    else if (m.type === 'metrics-text') { this.waiting.get(m.id)?.(m.text); this.waiting.delete(m.id); }
    else if (m.type === 'announced') { this.announcing.get(m.id)?.(); this.announcing.delete(m.id); }
    else if (m.type === 'apply') {
      if ('revoked' in m.change) this.listeners?.keyRevoked(Buffer.from(m.change.revoked));
      else if ('changed' in m.change) this.listeners?.keyChanged(Buffer.from(m.change.changed));
      // A refresh that fails leaves the poll to catch up; the announcer is not held up by it.
      else if ('limits' in m.change) await this.listeners?.limitsChanged().catch(() => {});
      else await this.listeners?.rulesChanged().catch(() => {});
      this.send({ type: 'applied', id: m.id });
    }
  }

  send(m: FromThread): void { this.port.postMessage(m); }

  close(): void {
    this.flush();
  }
}
