// The route table. Management endpoints are added here by their own modules.
import { managementRoutes } from '../api/management-routes.js';
import { chatCompletions } from './chat-completions.js';
import type { Route } from './handle-request.js';
import { embeddings } from './embeddings.js';
import { listModels } from './models.js';
import { metricsEndpoint, healthz } from './ops.js';

export const routes: Route[] = [
  { method: 'POST', pattern: '/v1/chat/completions', handler: chatCompletions, traced: 'chat' },
  { method: 'POST', pattern: '/v1/embeddings', handler: embeddings, traced: 'embeddings' },
  { method: 'GET', pattern: '/v1/models', handler: listModels },
  { method: 'GET', pattern: '/metrics', handler: metricsEndpoint },
  { method: 'GET', pattern: '/healthz', handler: healthz },
  ...managementRoutes,
];
