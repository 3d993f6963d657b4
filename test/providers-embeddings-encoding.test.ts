// base64 embeddings must carry exactly the float32 values of the float encoding,
// in OpenAI's byte order, and a short batch must fail the whole call.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { GatewayError } from '../src/errors.js';
import { decodeBase64, embeddingDataJson, embeddingsBody, encodeBase64, expectOneVectorPerInput } from '../src/providers/embeddings-encoding.js';
import { openaiCompatible } from '../src/providers/openai-compatible/index.js';

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

  it('builds the data array in input order, in the asked encoding, from floats or the upstream\'s text', () => {
    const vectors = [[1, 2], [0.5], [-0.25, 0]];
    for (const given of [vectors, ['[1,2]', '[ 0.5 ]', '[-2.5e-1, 0]'], [[1, 2], '[0.5]', [-0.25, 0]]]) {
      assert.deepEqual(JSON.parse(embeddingDataJson(given, 'float')), [
        { object: 'embedding', index: 0, embedding: [1, 2] },
        { object: 'embedding', index: 1, embedding: [0.5] },
        { object: 'embedding', index: 2, embedding: [-0.25, 0] },
      ]);
      const b64 = JSON.parse(embeddingDataJson(given, 'base64')) as Array<{ index: number; embedding: string }>;
      assert.deepEqual(b64.map((it) => it.index), [0, 1, 2]);
      assert.deepEqual(b64.map((it) => readLE(it.embedding)), vectors);
    }
    // The upstream's text goes out as it came: no re-printing of its digits.
    assert.equal(embeddingDataJson(['[0.10, 1E2]'], 'float'), '[{"object":"embedding","index":0,"embedding":[0.10, 1E2]}]');
  });

  it('writes the whole answer as bytes when every vector is the upstream\'s bytes, and as text otherwise, alike', () => {
    const texts = ['[1,2]', '[ 0.5 ]', '[-2.5e-1, 0]'];
    const tail = ',"model":"m","usage":{"prompt_tokens":3,"total_tokens":3}}';
    const asText = embeddingsBody(texts, 'float', tail);
    assert.equal(typeof asText, 'string');
    const asBytes = embeddingsBody(texts.map((t) => Buffer.from(t)), 'float', tail);
    assert.ok(Buffer.isBuffer(asBytes));
    assert.equal(asBytes.toString(), asText);
    assert.equal(asText, `{"object":"list","data":${embeddingDataJson(texts, 'float')}${tail}`);
    // base64 decodes the vectors, whichever form they came in.
    assert.equal(embeddingsBody(texts.map((t) => Buffer.from(t)), 'base64', tail), embeddingsBody(texts, 'base64', tail));
    assert.equal(embeddingsBody([], 'float', tail), `{"object":"list","data":[]${tail}`);
    // An item's other members, non-ASCII ones included, read the same in both forms.
    const extra = [{ label: 'ü' }, undefined, { n: 1, m: [true] }];
    const extraText = embeddingsBody(texts, 'float', tail, extra) as string;
    assert.equal((embeddingsBody(texts.map((t) => Buffer.from(t)), 'float', tail, extra) as Buffer).toString(), extraText);
    assert.deepEqual((JSON.parse(extraText) as { data: unknown[] }).data, [
      { object: 'embedding', index: 0, label: 'ü', embedding: [1, 2] },
      { object: 'embedding', index: 1, embedding: [0.5] },
      { object: 'embedding', index: 2, n: 1, m: [true], embedding: [-0.25, 0] },
    ]);
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

describe('reading an OpenAI embeddings answer from its text', () => {
  const { embeddingsText, embeddingsResponse } = openaiCompatible;
  const answer = (data: string) => `{"object":"list","data":${data},"model":"m","usage":{"prompt_tokens":7,"total_tokens":7}}`;

  it('keeps each vector\'s own text, ordered by index, and reads the usage', () => {
    const text = answer('[{"object":"embedding","index":1,"embedding":[0.25,-1e-3]},\n {"object":"embedding", "index":0, "embedding" : [ 1.50 , 2 ]}]');
    const r = embeddingsText!(text);
    assert.deepEqual(r.vectors, ['[ 1.50 , 2 ]', '[0.25,-1e-3]']);
    assert.deepEqual(r.usage, { prompt_tokens: 7, total_tokens: 7 });
    // The same values as the ordinary reading.
    assert.deepEqual(r.vectors.map((v) => JSON.parse(v as string)), embeddingsResponse!(JSON.parse(text)).vectors);
  });

  it('given the bytes of an all-ASCII answer, each vector is a view of its own bytes; otherwise its text', () => {
    const text = answer('[{"object":"embedding","index":1,"embedding":[0.25,-1e-3]},{"object":"embedding","index":0,"embedding":[ 1.50 , 2 ]}]');
    const bytes = Buffer.from(text);
    const r = embeddingsText!(text, bytes);
    assert.ok(r.vectors.every((v) => Buffer.isBuffer(v) && v.buffer === bytes.buffer), 'views of the body, not copies');
    assert.deepEqual(r.vectors.map((v) => (v as Buffer).toString()), ['[ 1.50 , 2 ]', '[0.25,-1e-3]']);
    // A character of two bytes before the vectors: offsets in the text no longer match the bytes, so texts.
    const wide = answer('[{"index":0,"embedding":[7]}]').replace('"object":"list"', '"object":"listé"');
    assert.deepEqual(embeddingsText!(wide, Buffer.from(wide)).vectors, ['[7]']);
  });

  it('reads the ordinary way what it cannot vouch for, and still refuses what is not floats', () => {
    const cases: Array<[string, unknown]> = [
      // A key elsewhere named "embedding": the placeholders do not line up with the items.
      [answer('[{"index":0,"embedding":[1]}]').replace('"model":"m"', '"model":"m","embedding":[9]'), [[1]]],
      // An escaped quote in a key ending in embedding.
      [answer('[{"index":0,"x\\"embedding":[5],"embedding":[1]}]'), [[1]]],
      // Not all numbers: no longer plain vector text, so parsed (and passed on) as before.
      [answer('[{"index":0,"embedding":[1,null]}]'), [[1, null]]],
      // One vector plain, the next not: the whole answer is read the ordinary way.
      [answer('[{"index":0,"embedding":[1]},{"index":1,"embedding":[2,true]}]'), [[1], [2, true]]],
      // Not JSON at all (a no-break space is not JSON whitespace): never passed on as text.
      [answer('[{"index":0,"embedding":[1,\u00a02]}]'), undefined],
    ];
    for (const [text, vectors] of cases) {
      if (vectors === undefined) { assert.throws(() => embeddingsText!(text), SyntaxError); continue; }
      assert.deepEqual(embeddingsText!(text).vectors, vectors, text);
    }
    for (const data of ['[{"index":0,"embedding":"AACAPw=="}]', '[{"index":0}]', '[3]']) {
      assert.throws(() => embeddingsText!(answer(data)), (err: unknown) => err instanceof GatewayError && err.code === 'upstream_error', data);
    }
  });
});

