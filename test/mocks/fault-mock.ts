// An OpenAI-compatible upstream that misbehaves on demand: it hangs, answers
// with error statuses, malformed JSON or SSE, drops the connection mid-body,
// or sends 100 MB. A real node:http server on port 0 (startMockServer), so the
// gateway meets each fault on a real socket; `sent` shows how much of a huge
// answer the gateway actually read before it cut the connection.
import type { ServerResponse } from 'node:http';
import { drainedOrClosed, sleep, startMockServer, type MockUpstream } from './mock-server.js';

export type UpstreamFault =
  | { kind: 'hang' }
  | { kind: 'status'; status: number; headers?: Record<string, string> }
  | { kind: 'malformed-json' }
  /** Declares 1000 bytes of JSON, sends ten, then drops the connection. */
  | { kind: 'drop-mid-body' }
  /** One good chunk, then the connection drops. */
  | { kind: 'drop-mid-stream' }
  /** A data line that is no chunk (by default not JSON at all); `first` sends it before any good chunk. */
  | { kind: 'bad-sse-data'; first: boolean; data?: string }
  /** `bytes` of one JSON document, chunked, or with its content-length declared; under `status` (200 unless set). */
  | { kind: 'huge-json'; bytes: number; declared: boolean; status?: number }
  /** One data line of `bytes` with no end; `first` sends it before any good chunk. */
  | { kind: 'huge-sse-line'; bytes: number; first: boolean };

export interface FaultMock extends MockUpstream {
  scenario: UpstreamFault;
  /** Body bytes the last huge answer managed to hand to its socket. */
  sent: number;
}

const MiB = 1024 * 1024;
const chunk = (content: string) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-f', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;

/** Writes `bytes` of `fill` after `head`, a MiB at a time, waiting for each to drain; stops once the peer is gone. */
async function pour(res: ServerResponse, mock: FaultMock, head: string, bytes: number, fill: string): Promise<void> {
  res.on('error', () => {});
  const block = Buffer.alloc(MiB, fill);
  mock.sent = head.length;
  res.write(head);
  for (let left = bytes - head.length; left > 0 && !res.destroyed; left -= MiB) {
    const piece = left >= MiB ? block : block.subarray(0, left);
    mock.sent += piece.length;
    if (!res.write(piece)) await drainedOrClosed(res);
  }
  if (!res.destroyed) res.end();
}

export async function startFaultMock(): Promise<FaultMock> {
  const mock = await startMockServer(async (_req, res, m) => {
    const self = m as FaultMock;
    const f = self.scenario;
    switch (f.kind) {
      case 'hang': return; // the socket stays open and silent until the gateway gives up
      case 'status':
        res.writeHead(f.status, { 'content-type': 'application/json', ...f.headers });
        res.end(JSON.stringify({ error: { message: `mock says ${f.status}`, type: 'server_error', param: null, code: null } }));
        return;
      case 'malformed-json':
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"id":"chatcmpl-f","choices":[{"index":0,');
        return;
      case 'drop-mid-body':
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
        res.write('{"id":"ch');
        await sleep(20);
        res.socket?.destroy();
        return;
      case 'drop-mid-stream':
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(chunk('partial '));
        await sleep(20);
        res.socket?.destroy();
        return;
      case 'bad-sse-data':
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        if (!f.first) { res.write(chunk('before ')); await sleep(20); }
        res.end(`data: ${f.data ?? '{this is not json'}\n\n`);
        return;
      case 'huge-json': {
        const head = '{"id":"chatcmpl-f","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"';
        res.writeHead(f.status ?? 200, { 'content-type': 'application/json', ...(f.declared ? { 'content-length': String(f.bytes) } : {}) });
        return pour(res, self, head, f.bytes, 'a');
      }
      case 'huge-sse-line': {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        if (!f.first) { res.write(chunk('before ')); await sleep(20); }
        return pour(res, self, 'data: {"choices":[{"delta":{"content":"', f.bytes, 'a');
      }
    }
  }) as FaultMock;
  mock.scenario = { kind: 'hang' };
  mock.sent = 0;
  return mock;
}
