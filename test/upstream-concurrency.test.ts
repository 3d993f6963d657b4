// A model call holds its upstream connection for the whole answer, so a cap on
// connections per origin is a cap on concurrent calls: past it, calls queue.
// By default there is none: 300 calls held open by the upstream all reach it
// at once. With `upstream.connections_per_origin` set, the calls past it wait,
// and /metrics says how many.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HTTP_KINDS, startGateway, type TestGateway } from './helpers/gateway.js';
import { oneUpstreamConfig, UPSTREAM_KEY_ENV } from './helpers/fixtures.js';
import { stopTestPostgres } from './helpers/pg.js';
import { eventually } from './helpers/resources.js';

after(stopTestPostgres);

const COMPLETION = JSON.stringify({
  id: 'chatcmpl-held', object: 'chat.completion', created: 1, model: 'up-model',
  choices: [{ index: 0, message: { role: 'assistant', content: 'released' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
});

/** An upstream that answers nothing until released: how many calls reach it shows how many the gateway sends at once. */
interface HoldingUpstream { url: string; arrived: number; release(): void; close(): Promise<void> }

async function holdingUpstream(): Promise<HoldingUpstream> {
  const held: ServerResponse[] = [];
  let released = false;
  const answer = (res: ServerResponse) => res.writeHead(200, { 'content-type': 'application/json' }).end(COMPLETION);
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      up.arrived++;
      if (released) answer(res); else held.push(res);
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const up: HoldingUpstream = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    arrived: 0,
    release() { released = true; for (const res of held.splice(0)) answer(res); },
    close: () => new Promise<void>((ok) => { server.closeAllConnections(); server.close(() => ok()); }),
  };
  return up;
}

const chat = (gw: TestGateway, key: string) => fetch(`${gw.url}/v1/chat/completions`, {
  method: 'POST',
  headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'up-model', messages: [{ role: 'user', content: 'hold on' }] }),
}).then(async (r) => ({ status: r.status, body: await r.json() as { choices?: Array<{ message: { content: string } }> } }));

function gauge(text: string, name: string): number {
  return Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1]);
}

/** A gateway in front of a fresh holding upstream, for one test. */
async function setUp(http: (typeof HTTP_KINDS)[number], upstream?: { connections_per_origin: number }) {
  const up = await holdingUpstream();
  const config = oneUpstreamConfig(up.url, upstream ? { upstream } : {});
  const gw = await startGateway({ http, config, env: { [UPSTREAM_KEY_ENV]: 'sk-held' } });
  return { up, gw, key: await gw.key(), close: async () => { up.release(); await gw.close(); await up.close(); } };
}

for (const http of HTTP_KINDS) {
  describe(`concurrent upstream calls over ${http}`, () => {
    test('without a cap, 300 calls the upstream holds open all reach it at once', async () => {
      const { up, gw, key, close } = await setUp(http);
      try {
        const calls = Array.from({ length: 300 }, () => chat(gw, key));
        // The old default (256 connections per origin) stopped at 256 here, the rest queued in the gateway.
        assert.ok(await eventually(() => up.arrived === 300, 15_000), `${up.arrived} of 300 reached the upstream`);
        up.release();
        const done = await Promise.all(calls);
        assert.ok(done.every((r) => r.status === 200 && r.body.choices?.[0]?.message.content === 'released'));
      } finally {
        await close();
      }
    });

    test('with connections_per_origin, calls past it wait for a connection, and /metrics counts them', async () => {
      const { up, gw, key, close } = await setUp(http, { connections_per_origin: 2 });
      try {
        const calls = Array.from({ length: 5 }, () => chat(gw, key));
        assert.ok(await eventually(() => up.arrived === 2, 5_000), `${up.arrived} reached the upstream`);
        const metrics = await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${key}` } })).text();
        assert.equal(up.arrived, 2, 'no more than the cap reached the upstream');
        assert.equal(gauge(metrics, 'sluice_upstream_queued'), 3, metrics);
        assert.equal(gauge(metrics, 'sluice_upstream_connections'), 2);
        up.release();
        const done = await Promise.all(calls);
        assert.deepEqual(done.map((r) => r.status), [200, 200, 200, 200, 200]);
        assert.equal(up.arrived, 5);
      } finally {
        await close();
      }
    });
  });
}
