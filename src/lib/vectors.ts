/** Float vectors as embeddings use them: scaled to unit length, stored as float32 little-endian bytes. */

/** `vector` scaled to unit length (a zero vector stays zero), so a dot product is the cosine. */
export function normalized(vector: Float32Array): Float32Array {
  let sum = 0;
  for (const x of vector) sum += x * x;
  if (sum === 0) return vector;
  const scale = 1 / Math.sqrt(sum);
  return vector.map((x) => x * scale);
}

/** A vector as stored: its float32 values, little-endian. */
export function vectorBytes(vector: Float32Array): Uint8Array {
  const bytes = new Uint8Array(vector.length * 4);
  const view = new DataView(bytes.buffer);
  vector.forEach((x, i) => view.setFloat32(i * 4, x, true));
  return bytes;
}

/** Reads a stored vector's `bytes` into `target` at `offset` (values); false when its length is not `dimensions`. */
export function readVector(bytes: Uint8Array, dimensions: number, target: Float32Array, offset: number): boolean {
  if (bytes.byteLength !== dimensions * 4) return false;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < dimensions; i++) target[offset + i] = view.getFloat32(i * 4, true);
  return true;
}
