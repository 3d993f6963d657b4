// A streaming chat request on a bare socket, for tests that must control
// exactly when a caller stops reading or goes away: fetch and the SDK buffer
// and read ahead on their own.
import { connect, type Socket } from 'node:net';

export interface RawStream {
  socket: Socket;
  /** Resolves with the first bytes of the answer (status line, headers, usually a first chunk). */
  first: Promise<string>;
  /** Resolves when the server closed the connection. */
  closed: Promise<void>;
}

export function openStream(base: string, key: string, body: unknown): RawStream {
  const u = new URL(base);
  const payload = JSON.stringify(body);
  const socket = connect(Number(u.port), u.hostname);
  socket.on('error', () => {});
  const first = new Promise<string>((ok, fail) => {
    socket.once('data', (c: Buffer) => ok(c.toString('latin1')));
    socket.once('close', () => fail(new Error('closed before any answer')));
  });
  first.catch(() => {});
  const closed = new Promise<void>((ok) => socket.once('close', () => ok()));
  socket.write(
    `POST /v1/chat/completions HTTP/1.1\r\nhost: ${u.host}\r\nauthorization: Bearer ${key}\r\n`
    + `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`,
  );
  return { socket, first, closed };
}
