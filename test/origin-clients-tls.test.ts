// An HTTPS upstream: every connection of one origin goes through the same
// connector, so a connection opened while another is busy resumes the TLS
// session the first one was given instead of paying for a full handshake.
// The upstream is a real node:https server with a certificate made for the
// test; it records, per connection, whether the session was resumed.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { OriginClients } from '../src/upstream/origin-clients.js';
import { call } from './helpers/origin-call.js';

// The certificate is the test's own and self-signed; the connector checks it against the
// system's authorities, so verification is off for this test process only.
process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';

let server: Server;
let origin: string;
const resumed: boolean[] = [];
const dir = mkdtempSync(join(tmpdir(), 'sluice-tls-'));

before(async () => {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
    '-subj', '/CN=127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
  server = createServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }, (req, res) => {
    req.resume();
    // Long enough that two calls made together need two connections.
    req.on('end', () => setTimeout(() => res.end('ok'), 50));
  });
  server.on('secureConnection', (s: TLSSocket) => resumed.push(s.isSessionReused()));
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((ok) => server.close(ok));
  rmSync(dir, { recursive: true, force: true });
});

test('a second connection to an HTTPS origin resumes the first one\'s TLS session', async () => {
  const pool = new OriginClients(origin, { connectTimeoutMs: 2_000, headersTimeoutMs: 2_000, bodyTimeoutMs: 2_000, connections: undefined });
  try {
    assert.equal((await call(pool, '/')).body, 'ok');
    // The first connection is free again: of the next two calls one takes it and one opens a second.
    assert.deepEqual((await Promise.all([call(pool, '/'), call(pool, '/')])).map((a) => a.body), ['ok', 'ok']);
    assert.equal(pool.clients, 2, 'two connections');
    assert.deepEqual(resumed, [false, true], 'the first connection handshakes in full; the second resumes its session');
  } finally {
    await pool.close();
  }
});
