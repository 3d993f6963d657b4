// An open-loop client for the outage and soak benches: starts `rps` chat
// requests a second whatever the server does (a closed loop would slow down
// with a failing server and hide the failures), a share of them streams, and a
// share of the streams is dropped by the client after the first chunk. Every
// answer is classified, so a bench can tell gateway-caused 5xx from upstream
// failures and client disconnects.
import { Agent, request } from 'node:http';

export interface PacedOptions {
  url: string;
  key: string;
  rps: number;
  seconds: number;
  /** 0..1 */
  streamShare: number;
  /** 0..1 of all requests: streams the client drops after the first body chunk (every n-th request, if it streams). */
  disconnectShare: number;
  /** Stops starting requests at once when it returns true (checked every tick). */
  stop?: () => boolean;
}

export interface PacedResult {
  sent: number;
  /** `200`, `200 stream_error`, `502 upstream_error`, `client_disconnect`, `socket: ECONNRESET`, … */
  outcomes: Map<string, number>;
  /** When each non-200 outcome happened, ms since the start: to place failures against an outage. */
  failuresAt: Array<{ at: number; outcome: string }>;
}

const body = (stream: boolean, i: number) => JSON.stringify({
  model: 'bench-model', stream, messages: [{ role: 'user', content: `Say hello to the benchmark, briefly. #${i}` }],
});

/** Upstream failures surface as these codes; anything else 5xx is the gateway's own. */
export const UPSTREAM_CODES = new Set(['upstream_error', 'upstream_timeout']);

export function gatewayFailures(r: PacedResult): number {
  let n = 0;
  for (const [k, v] of r.outcomes) {
    const status = Number(k.split(' ')[0]);
    if (k.startsWith('socket')) n += v;
    else if (status >= 500 && !UPSTREAM_CODES.has(k.split(' ')[1] ?? '')) n += v;
  }
  return n;
}

export async function pacedLoad(o: PacedOptions): Promise<PacedResult> {
  const u = new URL(o.url);
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const res: PacedResult = { sent: 0, outcomes: new Map(), failuresAt: [] };
  const t0 = Date.now();
  const note = (outcome: string) => {
    res.outcomes.set(outcome, (res.outcomes.get(outcome) ?? 0) + 1);
    if (outcome !== '200') res.failuresAt.push({ at: Date.now() - t0, outcome });
  };
  const inflight = new Set<Promise<void>>();
  // Deterministic shares: every 1/share-th request streams or disconnects, so two runs send the same mix.
  const streamEvery = o.streamShare > 0 ? Math.round(1 / o.streamShare) : 0;
  const dropEvery = o.disconnectShare > 0 ? Math.round(1 / o.disconnectShare) : 0;

  const one = (i: number): Promise<void> => new Promise((done) => {
    const stream = streamEvery > 0 && i % streamEvery === 0;
    const drop = stream && dropEvery > 0 && i % dropEvery === 0;
    const payload = body(stream, i);
    let dropped = false;
    const req = request({
      host: u.hostname, port: u.port, path: '/v1/chat/completions', method: 'POST', agent,
      headers: { authorization: `Bearer ${o.key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
    }, (r) => {
      let text = '';
      r.setEncoding('utf8');
      r.on('data', (c: string) => {
        if (dropped) return;
        if (drop && r.statusCode === 200) { dropped = true; note('client_disconnect'); req.destroy(); done(); return; }
        text += c;
      });
      r.on('end', () => {
        if (dropped) return;
        if (r.statusCode === 200) note(stream && text.includes('event: error') ? '200 stream_error' : '200');
        else {
          let code = '';
          try { code = (JSON.parse(text) as { error?: { code?: string } }).error?.code ?? ''; } catch { /* not JSON */ }
          note(`${r.statusCode} ${code}`.trim());
        }
        done();
      });
      r.on('error', () => { if (!dropped) { note('socket: response error'); done(); } });
    });
    req.on('error', (err: NodeJS.ErrnoException) => { if (!dropped) { note(`socket: ${err.code ?? err.message}`); done(); } });
    req.end(payload);
  });

  const TICK_MS = 10;
  let owed = 0;
  await new Promise<void>((finish) => {
    const timer = setInterval(() => {
      if (Date.now() - t0 >= o.seconds * 1000 || o.stop?.()) { clearInterval(timer); finish(); return; }
      owed += (o.rps * TICK_MS) / 1000;
      for (; owed >= 1; owed--) {
        const p = one(res.sent++);
        inflight.add(p);
        void p.then(() => inflight.delete(p));
      }
    }, TICK_MS);
  });
  await Promise.all(inflight);
  agent.destroy();
  return res;
}
