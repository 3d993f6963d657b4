// A TCP proxy in front of Postgres that a test can stall: connections stay
// open and accepted, and nothing passes either way, as a hung server or a
// half-open path behaves. Unlike a stopped server, nothing is refused or reset.
import { createServer, connect, type Server, type Socket } from 'node:net';
import { once } from 'node:events';

export interface StallProxy {
  /** Host:port to put in a connection string in place of the target's. */
  readonly port: number;
  stall(): void;
  pass(): void;
  close(): Promise<void>;
}

export async function startStallProxy(targetHost: string, targetPort: number): Promise<StallProxy> {
  let stalled = false;
  const pairs = new Set<[Socket, Socket]>();
  const server: Server = createServer((client) => {
    const upstream = connect(targetPort, targetHost);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    // Bytes are forwarded by hand, so that a stall can hold them where they are.
    client.on('data', (d) => { if (!stalled) upstream.write(d); });
    upstream.on('data', (d) => { if (!stalled) client.write(d); });
    const end = () => { pairs.delete(pair); client.destroy(); upstream.destroy(); };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as { port: number }).port,
    stall() { stalled = true; },
    pass() {
      stalled = false;
      // Whatever was cut in the middle of a message cannot be resumed: those connections end.
      for (const [a, b] of pairs) { a.destroy(); b.destroy(); }
    },
    close: () => new Promise<void>((ok) => { for (const [a, b] of pairs) { a.destroy(); b.destroy(); } server.close(() => ok()); }),
  };
}
