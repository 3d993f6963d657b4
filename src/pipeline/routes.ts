// The route table. Management endpoints are added here by their own modules.
import { managementRoutes } from '../api/management-routes.js';
import { chatCompletions } from './chat-completions.js';
import type { Route } from './handle-request.js';
import { embeddings } from './embeddings.js';
import { listModels, retrieveModel } from './models.js';
import { metricsEndpoint, healthz, readyz } from './ops.js';
import { createResponse } from './responses.js';
import { deleteResponse, getResponse, getResponseInputItems } from './responses-crud.js';
import { consoleRoutes } from '../ui/console-routes.js';

export const routes: Route[] = [
  { method: 'POST', pattern: '/v1/chat/completions', handler: chatCompletions, traced: 'chat' },
  { method: 'POST', pattern: '/v1/embeddings', handler: embeddings, traced: 'embeddings' },
  { method: 'POST', pattern: '/v1/responses', handler: createResponse, traced: 'responses' },
  { method: 'GET', pattern: '/v1/responses/:id', handler: getResponse, traced: 'stored_responses' },
  { method: 'DELETE', pattern: '/v1/responses/:id', handler: deleteResponse, traced: 'stored_responses' },
  { method: 'GET', pattern: '/v1/responses/:id/input_items', handler: getResponseInputItems, traced: 'stored_responses' },
  { method: 'GET', pattern: '/v1/models', handler: listModels, traced: 'models' },
  { method: 'GET', pattern: '/v1/models/:model*', handler: retrieveModel, traced: 'models' },
  { method: 'GET', pattern: '/metrics', handler: metricsEndpoint },
  { method: 'GET', pattern: '/healthz', handler: healthz },
  { method: 'GET', pattern: '/readyz', handler: readyz },
  ...managementRoutes,
  ...consoleRoutes,
];
