// base64 embeddings must carry exactly the float32 values of the float encoding,
// in OpenAI's byte order, and a short batch must fail the whole call.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { GatewayError } from '../src/errors.js';
import { decodeBase64, embeddingItems, encodeBase64, expectOneVectorPerInput } from '../src/providers/embeddings-encoding.js';

/** Decodes with Buffer's explicit little-endian reader, independently of the module under test. */
function readLE(b64: string): number[] {
  const bytes = Buffer.from(b64, 'base64');
  return Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4));
}

describe('embeddings encoding', () => {
  it('matches OpenAI base64 byte for byte', () => {
    // 1.0f = 00 00 80 3f and 2.0f = 00 00 00 40, little-endian.
    assert.equal(encodeBase64([1, 2]), 'AACAPwAAAEA=');
    assert.equal(encodeBase64([]), '');
  });

  it('decodes back to identical float32 values', () => {
    const vector = [0.1, -0.2, 1 / 3, 0, -0, 1e-45, -3.4028234663852886e38, 0.0023064255, ...Array.from({ length: 1536 }, (_, i) => Math.sin(i) / 7)];
    const b64 = encodeBase64(vector);
    const f32 = Float32Array.from(vector);
    for (const decoded of [readLE(b64), Array.from(decodeBase64(b64))]) {
      assert.equal(decoded.length, vector.length);
      decoded.forEach((v, i) => assert.ok(Object.is(v, f32[i]), `index ${i}: ${v} !== ${f32[i]}`));
    }
  });

  it('keeps float32-exact upstream values identical in both encodings', () => {
    const vector = [0.5, -0.9765625, 0.0078125, 0.25];
    assert.deepEqual(readLE(encodeBase64(vector)), vector);
  });

  it('builds the data array in input order, in the asked encoding', () => {
    const vectors = [[1, 2], [0.5], [-0.25, 0]];
    assert.deepEqual(embeddingItems(vectors, 'float'), [
      { object: 'embedding', index: 0, embedding: [1, 2] },
      { object: 'embedding', index: 1, embedding: [0.5] },
      { object: 'embedding', index: 2, embedding: [-0.25, 0] },
    ]);
    const b64 = embeddingItems(vectors, 'base64');
    assert.deepEqual(b64.map((it) => it.index), [0, 1, 2]);
    assert.deepEqual(b64.map((it) => readLE(it.embedding as string)), vectors);
  });

  it('fails a batch without one vector per input', () => {
    expectOneVectorPerInput([[1], [2]], 2);
    for (const [vectors, inputs] of [[[[1]], 2], [[], 1], [[[1], [2]], 1]] as const) {
      assert.throws(() => expectOneVectorPerInput(vectors, inputs), (err: unknown) =>
        err instanceof GatewayError && err.code === 'embeddings_incomplete' && err.status === 502
        && err.message === `The upstream returned ${vectors.length} embeddings for ${inputs} inputs.`);
    }
  });
});
