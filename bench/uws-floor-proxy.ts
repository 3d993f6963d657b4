// The floor of sluice's own stack, for `npm run bench`: uWebSockets.js in
// front and undici behind (through sluice's OriginClients, as every upstream
// call goes), with no logic between them. The node:http proxy prices a plain
// Node proxy; this prices the parts sluice is built on, so the gap between it
// and sluice is what sluice's own work costs, and its ratio to the proxy is
// the least any gateway on this stack can reach.
//
// Like sluice, it writes what one upstream read brought in one corked write
// (a microtask after the read's last frame) and sends the last batch with the
// end of the response, so both make the same syscalls per answer.
import type { Dispatcher } from 'undici';
import type { IncomingHttpHeaders } from 'node:http';
import { loadUws } from '../src/http/uws-server.js';
import { OriginClients } from '../src/upstream/origin-clients.js';

/** One buffer of `parts`, copied only when there is more than one. */
const joined = (parts: Buffer[]): Buffer => (parts.length === 1 ? parts[0]! : Buffer.concat(parts));

export async function uwsFloorProxy(upstream: string, upstreamKey: string): Promise<number> {
  const uws = loadUws();
  if (!uws) throw new Error('uWebSockets.js has no binary for this platform: the uws floor cannot run.');
  const clients = new OriginClients(new URL(upstream).origin, { connectTimeoutMs: 10_000, headersTimeoutMs: 300_000, bodyTimeoutMs: 300_000, connections: undefined });
  const base = new URL(upstream).pathname.replace(/\/$/, '');
  const app = uws.App();
  app.any('/*', (res, req) => {
    const path = base + req.getUrl();
    /** The client left or the response ended: uWS forbids touching `res` after either. */
    let finished = false;
    let controller: Dispatcher.DispatchController | undefined;
    res.onAborted(() => { finished = true; controller?.abort(new Error('client gone')); });
    const parts: Buffer[] = [];
    res.onData((ab, last) => {
      parts.push(Buffer.from(ab.slice(0)));
      if (!last) return;
      let head: [string, string] | undefined;
      let sent = false;
      let out: Buffer[] = [];
      let flushing = false;
      const writeHead = () => {
        if (sent || !head) return;
        sent = true;
        res.writeStatus(head[0]).writeHeader('content-type', head[1]);
      };
      const flush = () => {
        flushing = false;
        if (finished || !out.length) return;
        const batch = joined(out);
        out = [];
        res.cork(() => { writeHead(); res.write(batch); });
      };
      const handler: Dispatcher.DispatchHandler = {
        onRequestStart(c) { controller = c; },
        onResponseStart(_c, status, headers: IncomingHttpHeaders) { head = [String(status), String(headers['content-type'] ?? 'application/json')]; },
        onResponseData(_c, chunk) {
          out.push(chunk);
          if (!flushing) { flushing = true; queueMicrotask(flush); }
        },
        onResponseEnd() {
          if (finished) return;
          finished = true;
          const rest = joined(out);
          out = [];
          res.cork(() => { writeHead(); res.end(rest); });
        },
        onResponseError() {
          if (finished) return;
          finished = true;
          res.cork(() => { if (!sent) res.writeStatus('502 Bad Gateway'); res.end(); });
        },
      };
      clients.dispatch({
        path, method: 'POST', body: joined(parts),
        headers: { 'content-type': 'application/json', authorization: `Bearer ${upstreamKey}` },
      }, handler);
    });
  });
  return new Promise((ok, fail) => {
    app.listen('127.0.0.1', 0, (sock) => (sock ? ok(uws.us_socket_local_port(sock)) : fail(new Error('the uws floor could not listen'))));
  });
}
