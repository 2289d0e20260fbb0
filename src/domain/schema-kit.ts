import { Type, type TSchema, type TObject, type TProperties } from '@sinclair/typebox';

/** Strings that name things: non-empty, bounded, no NUL (PostgreSQL text cannot hold it). */
export const Name = (maxLength = 256) => Type.String({ minLength: 1, maxLength, pattern: '^[^\\u0000]+$' });
/** Ids of resources in bodies and paths: the characters ids are made of; anything else is a 400. */
export const ResourceId = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_.:-]+$' });
/** Free text (prompts, spoken text): bounded so one field cannot take the whole body. */
export const Text = (maxLength = 32_768) => Type.String({ maxLength });
/** A map of variable names to string values. */
export const StringMap = Type.Record(Type.String({ minLength: 1, maxLength: 128 }), Type.String({ maxLength: 8192 }), {
  maxProperties: 200,
});
/** The latest instant a JavaScript Date can hold (year 275760), in epoch ms. */
export const MAX_EPOCH_MS = 8_640_000_000_000_000;
/** A point in time in a request, epoch ms: bounded so it fits every store's bigint and a Date. */
export const EpochMs = (options: { description?: string } = {}) =>
  Type.Integer({ minimum: 0, maximum: MAX_EPOCH_MS, description: 'Epoch milliseconds.', ...options });
/** Any JSON object (free-form). */
export const FreeObject = Type.Object({}, { additionalProperties: true });

/** A closed object: unknown fields are refused (400), as Retell's `additionalProperties: false`. */
export function Strict<T extends TProperties>(properties: T, options: Record<string, unknown> = {}): TObject<T> {
  return Type.Object(properties, { additionalProperties: false, ...options });
}

export function Nullable<T extends TSchema>(schema: T) {
  return Type.Union([schema, Type.Null()]);
}

/*
 * For response schemas: nullable scalars as JSON Schema type arrays and string enums as `enum`,
 * where TypeBox would write an anyOf. fast-json-stringify writes these directly, but for an anyOf it
 * runs a validator on every field to pick the branch (measured on the call object: 2.9 -> 1.1 µs
 * per response). They are Unsafe types: keep them out of schemas that Value.Check reads.
 */
export const NullableString = (options: { description?: string } = {}) => Type.Unsafe<string | null>({ type: ['string', 'null'], ...options });
export const NullableInteger = (options: { description?: string } = {}) => Type.Unsafe<number | null>({ type: ['integer', 'null'], ...options });
export function StringEnum<const T extends readonly string[]>(values: T, options: { description?: string } = {}) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}
