// Validates an embeddings body (section 4.2). Token arrays are refused: they
// carry no text, so DLP could not see what the upstream would embed.
import { z } from 'zod';
import type { EmbeddingsRequest } from '../domain.js';
import { GatewayError } from '../errors.js';
import { bodyReader } from './request-schema.js';

const MAX_INPUTS = 2048;

export const embeddingsBody = z.looseObject({
  model: z.string().min(1),
  input: z.unknown(),
  encoding_format: z.enum(['float', 'base64'], { error: 'must be "float" or "base64"' }).optional(),
  dimensions: z.number().int().positive().optional(),
  user: z.string().optional(),
});

export const embeddingsBodyReader = bodyReader(embeddingsBody);

const isTokens = (v: unknown) => typeof v === 'number' || (Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'number'));

function readInput(input: unknown): { input: string[]; single: boolean } {
  if (typeof input === 'string') return { input: [input], single: true };
  if (isTokens(input) || (Array.isArray(input) && input.some(isTokens))) {
    throw new GatewayError('tokenized_input_unsupported', 'input must be text: pre-tokenised integer arrays are not accepted.', { param: 'input' });
  }
  if (!Array.isArray(input) || input.length === 0 || !input.every((s) => typeof s === 'string')) {
    throw new GatewayError('invalid_request', 'input must be a string or a non-empty array of strings.', { param: 'input' });
  }
  if (input.length > MAX_INPUTS) throw new GatewayError('invalid_request', `input holds at most ${MAX_INPUTS} strings.`, { param: 'input' });
  return { input: input as string[], single: false };
}

export function parseEmbeddingsRequest(raw: Record<string, unknown>): EmbeddingsRequest {
  const d = embeddingsBodyReader.read(raw);
  if (d.model === 'auto') throw new GatewayError('invalid_request', '"auto" is not accepted for embeddings: name an embedding model.', { param: 'model' });
  const req: EmbeddingsRequest = { model: d.model, ...readInput(d.input), encoding_format: d.encoding_format ?? 'float', raw };
  if (d.dimensions !== undefined) req.dimensions = d.dimensions;
  if (d.user !== undefined) req.user = d.user;
  return req;
}
