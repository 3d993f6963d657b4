// The workloads of `npm run bench`. Each one first checks that a target
// answers correctly, then measures: autocannon for throughput, a sequential
// probe for time to first byte, and a crowd of slow streams for memory and
// event-loop delay.
import { request as httpRequest, Agent } from 'node:http';
import autocannon from 'autocannon';
import type { Target } from './targets.js';
import { benchRequestHeaders } from './production-headers.js';
import { cpuTicks, idlePercent } from './machine-idle.js';

export interface Measure {
  rps?: number;
  p50?: number;
  p99?: number;
  /** Latency percentiles (ms) for the chart. */
  percentiles?: Record<string, number>;
  cpuUs?: number;
  /** Load cells: percent of the whole machine idle while the target was measured. */
  idlePct?: number;
  ttfbP50?: number;
  ttfbP99?: number;
  rssMb?: number;
  /** Slow streams: the event-loop delay p99 while all of them are open, after the last has started. */
  loopDelayP99Ms?: number;
  /** Slow streams: the same while they are being opened (a burst of arrivals). */
  openingLoopDelayP99Ms?: number;
  /** Slow streams: the most the client had open at once (first byte read, end not yet). */
  peakOpen?: number;
  /** Slow streams: seconds from the first request sent to the last first byte, how long a burst waits to be let in. */
  openingS?: number;
  failed?: number;
  /** Slow streams: how the failed ones failed (status and last bytes, or the socket error), counted. */
  failures?: Record<string, number>;
}

export interface Scenario {
  name: string;
  /** What the target must have answered correctly for this scenario to run on it. */
  needs: keyof Capabilities;
  /** A measure per target, in the order given. */
  run(targets: Target[]): Promise<Measure[]>;
}

/** A cell that measures each target on its own, one after another. */
const eachInTurn = (measure: (t: Target) => Promise<Measure>): Scenario['run'] => async (targets) => {
  const out: Measure[] = [];
  for (const t of targets) out.push(await measure(t));
  return out;
};

export interface Capabilities { chat: boolean; embeddings: boolean }

const SDK_HEADERS = benchRequestHeaders();

const headers = (t: Target) => ({ ...SDK_HEADERS, authorization: `Bearer ${t.key}`, 'content-type': 'application/json' });

/** A chat body of about `bytes` bytes; the mock answers whatever it is asked. */
export function chatBody(bytes: number, stream: boolean, extra: object = {}): string {
  const base = JSON.stringify({ model: 'bench-model', stream, ...extra, messages: [{ role: 'user', content: '' }] });
  const filler = 'Summarise the quarterly figures for the benchmark report, briefly. ';
  const content = filler.repeat(Math.ceil(Math.max(0, bytes - base.length) / filler.length)).slice(0, Math.max(0, bytes - base.length));
  return JSON.stringify({ model: 'bench-model', stream, ...extra, messages: [{ role: 'user', content }] });
}

const embeddingsBody = (n: number) => JSON.stringify({ model: 'bench-embed', input: Array.from({ length: n }, (_, i) => `benchmark sentence number ${i} about quarterly figures`) });

/**
 * Correctness before timing: a wrong answer makes every number after it
 * meaningless, so a target runs only the scenarios it answered correctly
 * (an earlier build may predate an endpoint).
 */
export async function verify(t: Target): Promise<Capabilities> {
  const post = (path: string, body: string) => fetch(t.url + path, { method: 'POST', headers: headers(t), body });
  const json: any = await (await post('/v1/chat/completions', chatBody(300, false))).json().catch(() => undefined);
  const sse = await (await post('/v1/chat/completions', chatBody(300, true))).text();
  const emb: any = await (await post('/v1/embeddings', embeddingsBody(100))).json().catch(() => undefined);
  return {
    chat: json?.choices?.[0]?.message?.content === 'hello from the bench mock'
      && (sse.match(/"content":"tok /g) ?? []).length === 20 && sse.trimEnd().endsWith('data: [DONE]'),
    embeddings: emb?.data?.length === 100,
  };
}

/**
 * Each cell first runs the same load unmeasured: a target's first seconds
 * under a new load are V8 compiling for it, and a gateway with N threads has
 * N isolates to warm, so without this its first cells priced the JIT.
 */
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 2);
/**
 * A load cell's seconds are split into rounds, every target taking one
 * stretch a round and the first of each round rotating. On the 2-core bench
 * VM one process's CPU per request drifted by half within a minute, the
 * logic-free proxy's as much as sluice's (4 s stretches: 67-105 µs for one
 * sluice, 74-131 for one proxy), so one stretch per target, one after
 * another, priced the machine's moment as much as the target: two rows of
 * the same code read 30 % apart (2026-11-28). Rounds give every target a
 * share of the same moments. They do not remove a second spread: six starts
 * of one build kept their own speeds (72 to 120 µs per JSON request, each
 * within about 10 % over 12 s), so a build's row against `before` still
 * moves by 15-20 % from run to run; `npm run bench:instructions` is the
 * measure of a change.
 */
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));

/** One measured stretch of a load cell on one target. */
interface Stretch { requests: number; ok: number; failed: number; seconds: number; cpuMicros: number; idlePct: number | undefined; latency: Record<string, number> }

async function stretch(t: Target, path: string, body: string, connections: number, seconds: number, warm: boolean): Promise<Stretch> {
  const opts = { url: t.url + path, method: 'POST' as const, connections, pipelining: 1, headers: headers(t), body };
  if (warm && WARMUP_SECONDS > 0) await autocannon({ ...opts, duration: WARMUP_SECONDS });
  const cpu0 = await t.cpuMicros();
  const ticks0 = cpuTicks();
  const r = await autocannon({ ...opts, duration: seconds });
  const idlePct = idlePercent(ticks0, cpuTicks());
  const cpu1 = await t.cpuMicros();
  return {
    requests: r.requests.total, ok: r.requests.total - r.non2xx - r.errors, failed: r.non2xx + r.errors, seconds: r.duration,
    cpuMicros: cpu1 - cpu0, idlePct,
    latency: { p50: r.latency.p50, p90: r.latency.p90, 'p97.5': r.latency.p97_5, p99: r.latency.p99, 'p99.9': r.latency.p99_9 },
  };
}

const median = (xs: number[]): number => { const a = [...xs].sort((x, y) => x - y); return a[(a.length - 1) >> 1]!; };

/** A target's stretches as one measure: totals for throughput and CPU, the median round for latency. */
function merged(parts: Stretch[]): Measure {
  const sum = (f: (p: Stretch) => number) => parts.reduce((a, p) => a + f(p), 0);
  const idle = parts.map((p) => p.idlePct).filter((x): x is number => x !== undefined);
  const percentiles = Object.fromEntries(Object.keys(parts[0]!.latency).map((k) => [k, median(parts.map((p) => p.latency[k]!))]));
  return {
    rps: sum((p) => p.requests) / Math.max(1e-9, sum((p) => p.seconds)),
    p50: percentiles.p50, p99: percentiles.p99, percentiles,
    cpuUs: sum((p) => p.cpuMicros) / Math.max(1, sum((p) => p.ok)),
    ...(idle.length ? { idlePct: idle.reduce((a, b) => a + b, 0) / idle.length } : {}),
    failed: sum((p) => p.failed),
  };
}

function load(path: string, body: string, connections: number, seconds: number): Scenario['run'] {
  return async (targets) => {
    const parts: Stretch[][] = targets.map(() => []);
    for (let r = 0; r < ROUNDS; r++) {
      for (let j = 0; j < targets.length; j++) {
        const i = (r + j) % targets.length;
        parts[i]!.push(await stretch(targets[i]!, path, body, connections, seconds / ROUNDS, r === 0));
      }
    }
    return parts.map(merged);
  };
}

/** Milliseconds to the first body byte of one stream whose chunks the upstream spaces by `paceMs`. */
function firstByte(t: Target, agent: Agent, payload: string): Promise<number> {
  const u = new URL(t.url);
  return new Promise<number>((ok, fail) => {
    const t0 = process.hrtime.bigint();
    let first = 0;
    const req = httpRequest({ host: u.hostname, port: u.port, path: '/v1/chat/completions', method: 'POST', agent, headers: headers(t) }, (res) => {
      res.on('data', () => { if (!first) first = Number(process.hrtime.bigint() - t0) / 1e6; });
      res.on('end', () => ok(first));
    });
    req.on('error', fail);
    req.end(payload);
  });
}

/**
 * Time to the first body byte of streams whose chunks the upstream spaces by
 * `paceMs`, one at a time on a kept-alive connection per target. The targets
 * take turns in blocks of consecutive samples, the first of each round
 * rotating: measured one after another, the cell favoured whichever target
 * ran last, as the machine changed under it, and the mock (whose time every
 * other target's is given against) ran first. A block keeps a target in the
 * state a paced stream leaves it in, as a run of its own would.
 */
function ttfb(paceMs: number, samples: number, rounds = 10): Scenario['run'] {
  return async (targets) => {
    const agents = targets.map(() => new Agent({ keepAlive: true, maxSockets: 1 }));
    const payload = chatBody(300, true, { bench_pace_ms: paceMs });
    const times: number[][] = targets.map(() => []);
    const block = Math.ceil(samples / rounds);
    // Unmeasured first, as every load cell is: unpaced streams for WARMUP_SECONDS, then 20 paced ones
    // on the cell's own connection. Twenty alone left the path to the first byte in V8's lower tiers
    // when the cell ran without the load cells before it (BENCH_ONLY=TTFB): sluice's time from the
    // request's arrival to its upstream write read 0.41 ms that way, 0.23 ms after 20,000 streams, and
    // its TTFB added about 1.0 ms against 0.5-0.6 (2026-11-29); the floors' moved as much for their
    // shorter paths, so a subset run priced the JIT, not the path.
    for (let i = 0; i < targets.length; i++) {
      const t = targets[i]!;
      if (WARMUP_SECONDS > 0) await autocannon({ url: `${t.url}/v1/chat/completions`, method: 'POST', connections: 8, headers: headers(t), body: chatBody(300, true), duration: WARMUP_SECONDS });
      for (let k = 0; k < 20; k++) await firstByte(t, agents[i]!, payload);
    }
    for (let r = 0; r < rounds; r++) {
      for (let j = 0; j < targets.length; j++) {
        const i = (r + j) % targets.length;
        for (let k = 0; k < block; k++) times[i]!.push(await firstByte(targets[i]!, agents[i]!, payload));
      }
    }
    for (const a of agents) a.destroy();
    return times.map((out) => {
      out.sort((a, b) => a - b);
      return { ttfbP50: out[Math.floor(out.length * 0.5)]!, ttfbP99: out[Math.floor(out.length * 0.99)]! };
    });
  };
}

/**
 * `count` streams open at once, each 20 chunks `paceMs` apart: what idle
 * connections cost in memory and loop delay. Each stream outlasts the time
 * the slowest target takes to open them all, so that every target holds all
 * `count` at its peak; `peakOpen` says whether it did. At 100 ms a chunk
 * (50,000 chunks a second) the logic-free proxy spent its core forwarding
 * chunks, opened streams at about 500 a second, and peaked near 2,800 open:
 * the cell then priced concurrency reached, not memory held. At 500 ms, with
 * 10 s streams, every target peaks at all 5,000.
 *
 * The event-loop delay is taken in two phases, split when every stream is
 * under way (its first byte has come, or it has failed, or the upstream holds
 * it): while they arrive, in waves of 250 every 20 ms, and while they are
 * held. The first prices a burst of arrivals, in which one loop turn takes a
 * whole wave; the second, what holding them open costs, which is what the
 * target for 5,000 open streams is about. RSS is the peak over both.
 *
 * `peakOpen` is counted by the mock, the upstream every target forwards to:
 * the streams held open at once. A target that sends nothing until its
 * answer is whole (buffered moderation) holds every stream while its caller
 * sees none; counted by first bytes, until 2026-11-28, its row read one
 * stream open and no held phase at all.
 *
 * `cpuUs` is the target's CPU per stream over the whole cell: a new
 * connection, the request, and 20 chunks each in an upstream read of its
 * own, as a real model paces its tokens. The other stream cell's 20 chunks
 * come in a read or two, and price the request more than the chunk.
 */
function slowStreams(count: number, paceMs: number): Scenario['run'] {
  return async (targets) => {
    const upstream = targets.find((t) => t.slowStreams);
    return eachInTurn((t) => slowStreamsOn(t, upstream, count, paceMs))(targets);
  };
}

async function slowStreamsOn(t: Target, upstream: Target | undefined, count: number, paceMs: number): Promise<Measure> {
  await t.resetStats?.();
  await upstream?.slowStreams?.(true);
  const cpu0 = await t.cpuMicros();
  const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
  const u = new URL(t.url);
  const payload = chatBody(300, true, { bench_pace_ms: paceMs, bench_close: true });
  let failed = 0;
  let open = 0;
  let peakOpen = 0;
  const failures: Record<string, number> = {};
  const fail = (why: string) => { failed++; failures[why] = (failures[why] ?? 0) + 1; };
  // Every stream has started (its first byte, or its failure): the opening phase ends.
  let started = 0;
  let settled = 0;
  let allStarted!: () => void;
  const opening = new Promise<void>((ok) => { allStarted = ok; });
  const one = () => new Promise<void>((ok) => {
    let opened = false;
    let counted = false;
    const start = () => { if (!counted && (counted = true) && ++started === count) allStarted(); };
    const req = httpRequest({ host: u.hostname, port: u.port, path: '/v1/chat/completions', method: 'POST', agent, headers: headers(t) }, (res) => {
      let last = '';
      res.on('data', (c: Buffer) => {
        if (!opened) { opened = true; peakOpen = Math.max(peakOpen, ++open); start(); }
        last = c.toString('utf8');
      });
      res.on('end', () => {
        if (opened) open--;
        settled++;
        start();
        if (res.statusCode !== 200 || !last.includes('[DONE]')) fail(`${res.statusCode}: ${last.slice(-160)}`);
        ok();
      });
      res.on('error', (e) => { if (opened) open--; settled++; start(); fail(e.message); ok(); });
    });
    req.on('error', (e) => { settled++; start(); fail(e.message); ok(); });
    req.end(payload);
  });
  const all: Promise<void>[] = [];
  const sentAt = performance.now();
  // Opened in waves: a burst of 5,000 SYNs overflows any listen backlog and measures the kernel, not the server.
  for (let i = 0; i < count; i += 250) {
    for (let j = i; j < Math.min(count, i + 250); j++) all.push(one());
    await new Promise((ok) => setTimeout(ok, 20));
  }
  // Or the upstream holds every stream not yet over: the target has let them all in, bytes or not.
  if (upstream) {
    void (async () => {
      while (started < count) {
        const held = await upstream.slowStreams!();
        if (held && held.open + settled >= count) return allStarted();
        await new Promise((ok) => setTimeout(ok, 25));
      }
    })();
  }
  await opening;
  const openingS = (performance.now() - sentAt) / 1000;
  const arriving = await t.stats?.();
  await t.resetStats?.();
  await Promise.all(all);
  agent.destroy();
  const cpuUs = (await t.cpuMicros() - cpu0) / Math.max(1, count - failed);
  const held = await t.stats?.();
  const loop = arriving && held
    ? { rssMb: Math.max(arriving.rssMb, held.rssMb), loopDelayP99Ms: held.loopDelayP99Ms, openingLoopDelayP99Ms: arriving.loopDelayP99Ms }
    : {};
  const atUpstream = await upstream?.slowStreams?.();
  return { failed, peakOpen: atUpstream?.peak ?? peakOpen, openingS, cpuUs, ...(failed ? { failures } : {}), ...loop };
}

export function scenarios(seconds: number, slowCount: number): Scenario[] {
  return [
    { name: 'json 300 B, c=64', needs: 'chat', run: load('/v1/chat/completions', chatBody(300, false), 64, seconds) },
    { name: 'json 32 KB, c=64', needs: 'chat', run: load('/v1/chat/completions', chatBody(32 * 1024, false), 64, seconds) },
    { name: 'stream 20 chunks, c=64', needs: 'chat', run: load('/v1/chat/completions', chatBody(300, true), 64, seconds) },
    { name: 'embeddings 100 inputs, c=16', needs: 'embeddings', run: load('/v1/embeddings', embeddingsBody(100), 16, seconds) },
    { name: 'TTFB, upstream paces 2 ms', needs: 'chat', run: ttfb(2, 200) },
    { name: `${slowCount} slow streams`, needs: 'chat', run: slowStreams(slowCount, 500) },
  ];
}
