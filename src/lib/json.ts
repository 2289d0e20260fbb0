/** Parses a JSON column; null stays null. */
export function parseJson<T>(text: string | null | undefined): T | null {
  return text == null ? null : (JSON.parse(text) as T);
}

/** Serialises a value for a JSON column; null and undefined become SQL NULL. */
export function toJson(value: unknown): string | null {
  return value === undefined || value === null ? null : JSON.stringify(value);
}

/** Size in bytes of a value's UTF-8 JSON text. */
export function jsonByteLength(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), 'utf8');
}
