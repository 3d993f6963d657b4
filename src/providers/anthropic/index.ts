// Anthropic Messages API. No embeddings API exists, so embeddingsRequest is
// absent and the pipeline answers `embeddings_unsupported`.
import type { ProviderAdapter } from '../../domain.js';
import { chatRequest } from './request.js';
import { chatResponse } from './response.js';
import { streamTranslator } from './stream.js';
import { errorDetails } from './errors.js';
import { passHeaders } from './headers.js';

export const anthropic: ProviderAdapter = {
  kind: 'anthropic',
  chatRequest,
  chatResponse,
  streamTranslator,
  errorDetails,
  passHeaders: (headers) => passHeaders(headers),
};
