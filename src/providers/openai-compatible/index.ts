// OpenAI, DeepSeek, Mistral and self-hosted servers: one adapter, the differences are config (base_url, credential).
import type { ProviderAdapter } from '../../domain.js';
import { chatRequest, embeddingsRequest } from './request.js';
import { chatResponse, embeddingsResponse, embeddingsText } from './response.js';
import { streamTranslator } from './stream.js';
import { errorDetails } from './errors.js';
import { passHeaders } from './headers.js';

export const openaiCompatible: ProviderAdapter = {
  kind: 'openai',
  chatRequest,
  chatResponse,
  streamTranslator,
  errorDetails,
  passHeaders,
  embeddingsRequest,
  embeddingsResponse,
  embeddingsText,
};
