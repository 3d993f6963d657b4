// Gateway time for a 100-input embeddings batch, without the network: request
// validation and translation, then the answer (decoding the upstream body,
// reading it, count check, encoding, and the reply as the bytes that go out),
// at 256 and 1536 dimensions, in both encodings.
import assert from 'node:assert/strict';
import { Bench } from 'tinybench';
import { openaiCompatible } from '../src/providers/openai-compatible/index.js';
import { decodeBase64, embeddingsBody, expectOneVectorPerInput } from '../src/providers/embeddings-encoding.js';
import { parseEmbeddingsRequest } from '../src/pipeline/embeddings-request.js';

const INPUTS = 100;
const target = { provider: 'openai', kind: 'openai' as const, baseUrl: 'http://127.0.0.1:1/v1', model: 'text-embedding-3-small', apiKey: 'k' };
const input = Array.from({ length: INPUTS }, (_, i) => `document number ${i}: some text to embed, about one sentence long.`);

function upstreamBody(dims: number): Buffer {
  const data = input.map((_, index) => ({ object: 'embedding', index, embedding: Array.from({ length: dims }, (_, j) => Math.fround(Math.sin(index + j) / 3)) }));
  return Buffer.from(JSON.stringify({ object: 'list', data, model: target.model, usage: { prompt_tokens: 1200, total_tokens: 1200 } }));
}

/** The reply's bytes: a string body is encoded on the way out, as the front end does. */
function gateway(raw: Record<string, unknown>, bytes: Buffer): Buffer {
  const req = parseEmbeddingsRequest(raw);
  openaiCompatible.embeddingsRequest!(target, req);
  const result = openaiCompatible.embeddingsText!(bytes.toString('utf8'), bytes);
  expectOneVectorPerInput(result.vectors, req.input.length);
  const rest = JSON.stringify({ model: target.model, usage: result.usage });
  const body = embeddingsBody(result.vectors, req.encoding_format, `,${rest.slice(1)}`);
  return typeof body === 'string' ? Buffer.from(body) : body;
}

const bench = new Bench({ time: 1_000 });
for (const dims of [256, 1536]) {
  const body = upstreamBody(dims);
  for (const encoding_format of ['float', 'base64'] as const) {
    const raw = { model: target.model, input, encoding_format };
    // Correct first: base64 decodes to the same float32 values as the float answer.
    const out = JSON.parse(gateway(raw, body).toString());
    assert.equal(out.data.length, INPUTS);
    const first = JSON.parse(body.toString()).data[0].embedding as number[];
    const got = encoding_format === 'base64' ? Array.from(decodeBase64(out.data[0].embedding)) : out.data[0].embedding;
    assert.deepEqual(got, first.map((v) => Math.fround(v)));
    bench.add(`${INPUTS} inputs x ${dims} dims, ${encoding_format}`, () => { gateway(raw, body); });
  }
  const text = body.toString();
  bench.add(`${INPUTS} x ${dims}: JSON.parse of the upstream body alone`, () => { JSON.parse(text); });
}
await bench.run();
for (const t of bench.tasks) {
  const r = t.result as unknown as { latency?: { p50?: number; mean?: number }; mean?: number };
  const p50 = r.latency?.p50 ?? r.mean ?? NaN;
  console.log(`${t.name.padEnd(52)} p50 ${Number(p50).toFixed(3)} ms`);
}
