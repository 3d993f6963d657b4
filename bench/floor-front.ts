// The front end of the bench's logic-free floors: uWebSockets.js, as sluice
// runs it, forwarding each request to a back end and its answer back. Like
// sluice, it writes what one upstream read brought in one corked write (a
// microtask after the read's last frame) and sends the last batch with the end
// of the response, so every floor and sluice make the same syscalls per answer
// and differ only in what runs between them.
import { copyChunk, loadUws } from '../src/http/uws-server.js';

/** What a back end reports about one upstream answer; it calls `end` or `error` once, last. */
export interface FloorSink {
  head(status: number, contentType: string): void;
  data(chunk: Buffer): void;
  end(): void;
  error(): void;
}

/** Sends one request upstream; the function it returns cuts the call (the client left). */
export type FloorBackEnd = (path: string, body: Buffer, sink: FloorSink) => () => void;

/** One buffer of `parts`, copied only when there is more than one. */
const joined = (parts: Buffer[]): Buffer => (parts.length === 1 ? parts[0]! : Buffer.concat(parts));

/** Listens on an ephemeral port of 127.0.0.1 and resolves with it. */
export function listenFloor(name: string, upstream: string, send: FloorBackEnd): Promise<number> {
  const uws = loadUws();
  if (!uws) throw new Error(`uWebSockets.js has no binary for this platform: the ${name} cannot run.`);
  const base = new URL(upstream).pathname.replace(/\/$/, '');
  const app = uws.App();
  app.any('/*', (res, req) => {
    const path = base + req.getUrl();
    /** The client left or the response ended: uWS forbids touching `res` after either. */
    let finished = false;
    let cut: (() => void) | undefined;
    res.onAborted(() => { finished = true; cut?.(); });
    const parts: Buffer[] = [];
    res.onData((ab, last) => {
      parts.push(copyChunk(ab));
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
      cut = send(path, joined(parts), {
        head(status, contentType) { head = [String(status), contentType]; },
        data(chunk) {
          out.push(chunk);
          if (!flushing) { flushing = true; queueMicrotask(flush); }
        },
        end() {
          if (finished) return;
          finished = true;
          const rest = joined(out);
          out = [];
          res.cork(() => { writeHead(); res.end(rest); });
        },
        error() {
          if (finished) return;
          finished = true;
          res.cork(() => { if (!sent) res.writeStatus('502 Bad Gateway'); res.end(); });
        },
      });
    });
  });
  return new Promise((ok, fail) => {
    app.listen('127.0.0.1', 0, (sock) => (sock ? ok(uws.us_socket_local_port(sock)) : fail(new Error(`the ${name} could not listen`))));
  });
}
