// Both servers copy the request headers sluice reads (src/http/request-headers.ts),
// and only those: an SDK's request carries a dozen more that nothing reads, and
// copying each cost the gateway ~2.7k instructions. An empty header reads as
// absent on both, so the two front ends hand the pipeline the same object.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHttpServer } from '../src/http/create-server.js';
import { REQUEST_HEADERS, type RequestHeaders } from '../src/http/request-headers.js';
import { HTTP_KINDS } from './helpers/gateway.js';
import { rawExchange } from './helpers/raw-http.js';
import { SDK_REQUEST_HEADERS } from '../bench/production-headers.js';

/** The SDK's headers as head lines; the test sends its own accept-encoding. */
const SDK_HEADERS = Object.entries(SDK_REQUEST_HEADERS).filter(([k]) => k !== 'accept-encoding').map(([k, v]) => `${k}: ${v}`);

for (const http of HTTP_KINDS) {
  describe(`request headers over ${http}`, () => {
    test('the listed headers are copied, empty ones as absent, and no other', async () => {
      const seen: RequestHeaders[] = [];
      const server = createHttpServer(http, (req, res) => {
        seen.push(req.headers);
        void req.body().then(() => res.send(200, [['content-type', 'text/plain']], 'ok'));
      }, { bodyLimitBytes: 1024, onHandlerError: (err) => { throw err; } });
      const port = await server.listen('127.0.0.1', 0);
      try {
        const body = '{"model":"m"}';
        const head = [
          'POST /v1/chat/completions HTTP/1.1', `host: 127.0.0.1:${port}`, 'authorization: Bearer sk-test',
          'content-type: application/json', `content-length: ${body.length}`, 'accept-encoding: gzip, br',
          'x-forwarded-proto: https', 'gateway-trace: true', 'gateway-dry-run: ', 'connection: keep-alive', ...SDK_HEADERS,
        ];
        const { text } = await rawExchange(`http://127.0.0.1:${port}`, `${head.join('\r\n')}\r\n\r\n${body}`);
        assert.match(text, /^HTTP\/1\.1 200/);
        assert.equal(seen.length, 1);
        assert.deepEqual({ ...seen[0] }, {
          authorization: 'Bearer sk-test', 'content-length': String(body.length), connection: 'keep-alive', host: `127.0.0.1:${port}`,
          'accept-encoding': 'gzip, br', 'x-forwarded-proto': 'https', 'gateway-dry-run': undefined, 'gateway-trace': 'true',
          // Read for a GET or HEAD only (the console's revalidation); this is a POST.
          'if-none-match': undefined,
        });
        assert.deepEqual(Object.keys(seen[0]!).sort(), [...REQUEST_HEADERS].sort());
      } finally {
        await server.close();
      }
    });
  });
}
