// How many gateways `sluice serve` runs: `server.threads`, by default one per
// available core. uWebSockets.js runs them as threads sharing one port through
// SO_REUSEPORT; node:http, which on Node 20 cannot bind a port twice in one
// process, runs them as cluster worker processes (src/threads/gateway-peer.ts).
import { availableParallelism } from 'node:os';
import type { Config } from '../config/load-config.js';

export function gatewayThreads(config: Config): number {
  return config.server.threads ?? availableParallelism();
}
