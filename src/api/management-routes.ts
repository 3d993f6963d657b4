// The management endpoints of spec 4.4 (API keys, routes, traces), for the route table.
import type { Route } from '../pipeline/handle-request.js';
import { createKeyHandler, listKeysHandler, revokeKeyHandler } from './api-keys.js';
import { keyUsageHandler, patchKeyHandler } from './api-key-limits.js';
import {
  createRouteHandler, deleteRouteHandler, getRouteHandler, listRoutesHandler, patchRouteHandler, replaceRouteHandler,
} from './routes.js';
import { usageHandler } from './usage.js';
import { getTraceHandler, headTraceHandler, listTracesHandler, payloadHandler } from './traces.js';

export const managementRoutes: Route[] = [
  { method: 'GET', pattern: '/v1/api-keys', handler: listKeysHandler },
  { method: 'POST', pattern: '/v1/api-keys', handler: createKeyHandler },
  { method: 'DELETE', pattern: '/v1/api-keys/:id', handler: revokeKeyHandler },
  { method: 'PATCH', pattern: '/v1/api-keys/:id', handler: patchKeyHandler },
  { method: 'GET', pattern: '/v1/api-keys/:id/usage', handler: keyUsageHandler },
  { method: 'GET', pattern: '/v1/routes', handler: listRoutesHandler },
  { method: 'POST', pattern: '/v1/routes', handler: createRouteHandler },
  { method: 'GET', pattern: '/v1/routes/:id', handler: getRouteHandler },
  { method: 'PUT', pattern: '/v1/routes/:id', handler: replaceRouteHandler },
  { method: 'PATCH', pattern: '/v1/routes/:id', handler: patchRouteHandler },
  { method: 'DELETE', pattern: '/v1/routes/:id', handler: deleteRouteHandler },
  { method: 'GET', pattern: '/v1/traces', handler: listTracesHandler },
  { method: 'GET', pattern: '/v1/traces/:id', handler: getTraceHandler },
  { method: 'HEAD', pattern: '/v1/traces/:id', handler: headTraceHandler },
  { method: 'GET', pattern: '/v1/payloads/:id', handler: payloadHandler },
  { method: 'GET', pattern: '/v1/usage', handler: usageHandler },
];
