// Loads the OpenAI wire transcripts (test/fixtures/openai/*.json) for the
// suites that replay them through a gateway.
import { readdirSync, readFileSync } from 'node:fs';
import type { Transcript } from '../mocks/mock-server.js';

export interface OpenAIFixture {
  name: string;
  description: string;
  request: Record<string, unknown>;
  response: Transcript;
  expect?: { usage_estimated?: boolean; key_order?: boolean };
}

// Compiled to dist/test/helpers/: the JSON stays in the source tree.
const DIR = new URL('../../../test/fixtures/openai/', import.meta.url);

export function loadOpenAIFixtures(): OpenAIFixture[] {
  return readdirSync(DIR).filter((f) => f.endsWith('.json')).sort().map((f) => ({
    name: f.replace(/\.json$/, ''),
    ...(JSON.parse(readFileSync(new URL(f, DIR), 'utf8')) as Omit<OpenAIFixture, 'name'>),
  }));
}

/** The upstream's chunks of an SSE transcript, without the `[DONE]` sentinel; data given as literal text is parsed. */
export function upstreamChunks(t: Transcript): Array<Record<string, unknown>> {
  return (t.sse ?? []).filter((e) => e.data !== '[DONE]')
    .map((e) => (typeof e.data === 'string' ? JSON.parse(e.data) : e.data) as Record<string, unknown>);
}
