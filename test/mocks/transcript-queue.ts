// A mock upstream that answers each request with the next recorded transcript
// of a queue (a multi-step agent loop needs a different answer per step).
import { playTranscript, startMockServer, type MockUpstream, type Transcript } from './mock-server.js';

export interface QueueMock extends MockUpstream { queue: Transcript[] }

export async function startTranscriptQueue(): Promise<QueueMock> {
  const mock = await startMockServer(async (_req, res, m) => {
    const next = (m as QueueMock).queue.shift();
    if (!next) { res.writeHead(500, { 'content-type': 'application/json' }); res.end('{"error":{"message":"transcript queue empty"}}'); return; }
    await playTranscript(res, next);
  }) as QueueMock;
  mock.queue = [];
  return mock;
}
