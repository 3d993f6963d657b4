// How many gateway threads `sluice serve` runs. uWebSockets.js threads share
// one port through SO_REUSEPORT; node:http on Node 20 cannot bind a port twice
// in one process, so the fallback front end always runs one thread.
import { availableParallelism } from 'node:os';
import type { Config } from '../config/load-config.js';
import type { HttpChoice } from '../http/create-server.js';
import { loadUws } from '../http/uws-server.js';

export function gatewayThreads(config: Config, http: HttpChoice): number {
  if (http === 'node' || !loadUws()) return 1;
  return config.server.threads ?? availableParallelism();
}
