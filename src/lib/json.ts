/** Size in bytes of a value's UTF-8 JSON text. */
export function jsonByteLength(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), 'utf8');
}
