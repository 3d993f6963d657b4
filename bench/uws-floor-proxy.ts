// The floor of sluice's own stack, for `npm run bench`: uWebSockets.js in
// front and sluice's own upstream client behind (OriginClients, as every
// upstream call goes), with no logic between them. The node:http proxy prices a plain
// Node proxy; this prices the parts sluice is built on, so the gap between it
// and sluice is what sluice's own work costs, and its ratio to the proxy is
// the least any gateway on this stack can reach.
import { OriginClients, type CallController } from '../src/upstream/origin-clients.js';
import { listenFloor } from './floor-front.js';

export function uwsFloorProxy(upstream: string, upstreamKey: string): Promise<number> {
  const clients = new OriginClients(new URL(upstream).origin, { connectTimeoutMs: 10_000, headersTimeoutMs: 300_000, bodyTimeoutMs: 300_000, connections: undefined });
  return listenFloor('uws floor', upstream, (path, body, sink) => {
    let controller: CallController | undefined;
    clients.dispatch({ path, method: 'POST', body, headers: { 'content-type': 'application/json', authorization: `Bearer ${upstreamKey}` } }, {
      onRequestStart(c) { controller = c; },
      onResponseStart(_c, status, head) { sink.head(status, head.get('content-type') ?? 'application/json'); },
      // The chunk is the client's read buffer, valid during the call; the sink writes it a microtask later.
      onResponseData(_c, chunk) { sink.data(Buffer.from(chunk)); },
      onResponseEnd() { sink.end(); },
      onResponseError() { sink.error(); },
    });
    return () => controller?.abort(new Error('client gone'));
  });
}
