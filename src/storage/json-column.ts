/**
 * JSON columns. Both dialects store JSON as TEXT (one set of queries for SQLite and PostgreSQL);
 * the table types say what each column decodes to, and only the repositories encode and decode.
 */

declare const decodesTo: unique symbol;

/** A TEXT column holding the JSON encoding of a `T`. */
export type JsonText<T> = string & { readonly [decodesTo]?: T };

/** Encodes a value for a JSON column. */
export function encodeJson<T>(value: T): JsonText<T> {
  return JSON.stringify(value);
}

/** Encodes a value for a nullable JSON column: null and undefined become SQL NULL. */
export function encodeJsonOrNull<T>(value: T | null | undefined): JsonText<T> | null {
  return value === undefined || value === null ? null : encodeJson(value);
}

/** Decodes a JSON column written by encodeJson. */
export function decodeJson<T>(text: JsonText<T>): T {
  return JSON.parse(text) as T;
}

/** Decodes a nullable JSON column; SQL NULL stays null. */
export function decodeJsonOrNull<T>(text: JsonText<T> | null | undefined): T | null {
  return text === null || text === undefined ? null : decodeJson(text);
}
