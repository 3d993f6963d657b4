// The embeddings answer, whatever the upstream: the gateway always asks for
// float vectors and encodes base64 itself, so both encodings carry the same
// float32 values, and a short batch fails the whole call.
import type { EmbeddingVector } from '../domain.js';
import { GatewayError } from '../errors.js';

// OpenAI's base64 is the little-endian bytes of a float32 array. Typed arrays use
// the machine's byte order, so a big-endian host swaps before encoding.
const BIG_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 0;

/** Base64 of the vector as little-endian float32, exactly as OpenAI's `encoding_format: "base64"`. */
export function encodeBase64(vector: readonly number[]): string {
  const f32 = Float32Array.from(vector);
  const bytes = Buffer.from(f32.buffer, f32.byteOffset, f32.byteLength);
  if (BIG_ENDIAN) bytes.swap32();
  return bytes.toString('base64');
}

/** The inverse of encodeBase64, for clients and tests. */
export function decodeBase64(b64: string): Float32Array {
  const bytes = Buffer.from(b64, 'base64');
  if (BIG_ENDIAN) bytes.swap32();
  // Copy into a fresh, aligned buffer: Buffer.from may hand back a slice of a shared pool at any offset.
  const out = new Float32Array(bytes.byteLength / 4);
  new Uint8Array(out.buffer).set(bytes);
  return out;
}

/** No partial result (spec 4.2 rule 2): anything but one vector per input fails the call. */
export function expectOneVectorPerInput(vectors: readonly unknown[], inputs: number): void {
  if (vectors.length !== inputs) {
    throw new GatewayError('embeddings_incomplete', `The upstream returned ${vectors.length} embeddings for ${inputs} inputs.`);
  }
}

/** A vector's JSON text, whichever form it came in. */
function vectorJson(v: EmbeddingVector): string {
  if (typeof v === 'string') return v;
  // Bytes are only ever kept where they are ASCII (embeddingsText).
  return Buffer.isBuffer(v) ? v.toString('latin1') : JSON.stringify(v);
}

/** Per vector, the item's other members as the upstream sent them (EmbeddingsResult.itemExtra). */
export type ItemExtra = readonly (Record<string, unknown> | undefined)[] | undefined;

/** An item's text up to its vector: the upstream's other members of the item go before it. */
function itemHead(index: number, extra: ItemExtra): string {
  const more = extra?.[index];
  const members = more === undefined ? '' : `${JSON.stringify(more).slice(1, -1)},`;
  return `${index ? ',' : ''}{"object":"embedding","index":${index},${members}"embedding":`;
}

/**
 * The OpenAI `data` array as JSON text, in input order, in the encoding the
 * caller asked for. Written out by hand because a vector the upstream sent as
 * text (EmbeddingVector) goes in as that text, with no parse and re-print.
 */
export function embeddingDataJson(vectors: readonly EmbeddingVector[], format: 'float' | 'base64', extra?: ItemExtra): string {
  let out = '[';
  for (let index = 0; index < vectors.length; index++) {
    const v = vectors[index]!;
    const embedding = format === 'base64'
      ? `"${encodeBase64(Array.isArray(v) ? v : JSON.parse(vectorJson(v)) as number[])}"`
      : vectorJson(v);
    out += `${itemHead(index, extra)}${embedding}}`;
  }
  return `${out}]`;
}

const CLOSE_ITEM = Buffer.from('}');

/**
 * The whole answer: `{"object":"list","data":[...]` and then `tail` (the
 * members after `data`, from its comma to the closing brace). Float vectors
 * that are the upstream's own bytes go out as bytes, copied once into the
 * body: a string of 250 KB (100 × 256 floats) cost about four times as much
 * to build and encode again on the way out.
 */
export function embeddingsBody(vectors: readonly EmbeddingVector[], format: 'float' | 'base64', tail: string, extra?: ItemExtra): string | Buffer {
  if (format !== 'float' || vectors.length === 0 || !vectors.every((v) => Buffer.isBuffer(v))) {
    return `{"object":"list","data":${embeddingDataJson(vectors, format, extra)}${tail}`;
  }
  const parts: Buffer[] = [Buffer.from('{"object":"list","data":[')];
  for (let index = 0; index < vectors.length; index++) parts.push(Buffer.from(itemHead(index, extra)), vectors[index] as Buffer, CLOSE_ITEM);
  parts.push(Buffer.from(`]${tail}`));
  return Buffer.concat(parts);
}
