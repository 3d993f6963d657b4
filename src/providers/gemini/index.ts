// Google Gemini API (generativelanguage.googleapis.com). Serves both provider
// names of the catalogue: `gemini` for chat and `google` for embeddings, which
// share one credential since one API key is valid for both.
import type { ProviderAdapter } from '../../domain.js';
import { chatRequest, embeddingsRequest } from './request.js';
import { chatResponse, embeddingsResponse } from './response.js';
import { streamTranslator } from './stream.js';
import { credentialRejected, errorDetails, errorHeaders } from './errors.js';
import { passHeaders } from './headers.js';

export const gemini: ProviderAdapter & Required<Pick<ProviderAdapter, 'errorHeaders'>> = {
  kind: 'gemini',
  chatRequest,
  chatResponse,
  streamTranslator,
  errorDetails,
  passHeaders,
  errorHeaders,
  credentialRejected,
  embeddingsRequest,
  embeddingsResponse,
};
