// A request whose path goes out byte for byte: fetch would normalise it.
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';

export interface Raw { status: number; body: any; text: string; headers: IncomingHttpHeaders; raw: Buffer }

/**
 * node:http sends the path byte for byte, where fetch would normalise it; a
 * fresh connection each time (`agent: false`), so one request cannot leave
 * state for the next. Rejects when the connection drops before a full answer.
 */
export function rawRequest(base: string, method: string, path: string, headers: Record<string, string> = {}, body?: string | Buffer): Promise<Raw> {
  const u = new URL(base);
  return new Promise((ok, fail) => {
    const req = httpRequest({ host: u.hostname, port: u.port, method, path, agent: false, headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('error', fail);
      res.on('aborted', () => fail(new Error('the response was cut off')));
      res.on('end', () => {
        const raw = Buffer.concat(parts);
        const text = raw.toString('utf8');
        let parsed: any;
        try { parsed = text ? JSON.parse(text) : undefined; } catch { parsed = undefined; }
        ok({ status: res.statusCode!, body: parsed, text, headers: res.headers, raw });
      });
    });
    req.on('error', fail);
    req.end(body);
  });
}

/** Writes `bytes` on a fresh socket and resolves with everything read until the server closes it or `idleMs` passes. */
export function rawExchange(base: string, bytes: Buffer | string, idleMs = 300): Promise<{ text: string; closedByServer: boolean }> {
  const u = new URL(base);
  return new Promise((ok, fail) => {
    const socket = connect(Number(u.port), u.hostname);
    const parts: Buffer[] = [];
    let timer: NodeJS.Timeout | undefined;
    const idle = () => { clearTimeout(timer); timer = setTimeout(() => { socket.destroy(); ok({ text: Buffer.concat(parts).toString('latin1'), closedByServer: false }); }, idleMs); };
    socket.on('data', (c: Buffer) => { parts.push(c); idle(); });
    socket.on('end', () => { clearTimeout(timer); socket.destroy(); ok({ text: Buffer.concat(parts).toString('latin1'), closedByServer: true }); });
    socket.on('error', fail);
    socket.write(bytes);
    idle();
  });
}
