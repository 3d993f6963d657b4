// Picks the front end: uWebSockets.js unless SLUICE_HTTP=node (or config) asks
// for node:http, or the native binary cannot load on this platform.
import { createNodeServer } from './node-server.js';
import { createUwsServer, loadUws } from './uws-server.js';
import type { HttpServer, RequestHandler, ServerOptions } from './types.js';

export type HttpChoice = 'auto' | 'uws' | 'node';

export function createHttpServer(choice: HttpChoice, handler: RequestHandler, opts: ServerOptions): HttpServer {
  if (choice !== 'node') {
    const uws = loadUws();
    if (uws) return createUwsServer(uws, handler, opts);
    if (choice === 'uws') throw new Error('uWebSockets.js was requested but its binary cannot load on this platform.');
  }
  return createNodeServer(handler, opts);
}
