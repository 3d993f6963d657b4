// OpenAI, DeepSeek, Mistral and self-hosted servers: one adapter, the differences are config (base_url, credential).
import type { ProviderAdapter } from '../../domain.js';
import { chatRequest, embeddingsRequest } from './request.js';
import { chatResponse, embeddingsResponse } from './response.js';
import { streamTranslator } from './stream.js';
import { errorMessage } from './errors.js';

export const openaiCompatible: ProviderAdapter = {
  kind: 'openai',
  chatRequest,
  chatResponse,
  streamTranslator,
  errorMessage,
  embeddingsRequest,
  embeddingsResponse,
};
