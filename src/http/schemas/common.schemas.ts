import { Type, type TSchema } from '@sinclair/typebox';
import { ResourceId } from '../../domain/schema-kit.ts';

export const ErrorResponse = Type.Object(
  {
    status: Type.Literal('error'),
    code: Type.String(),
    message: Type.String(),
    details: Type.Optional(Type.Object({}, { additionalProperties: true })),
  },
  { title: 'Error', description: 'Every error: a stable snake_case code and a readable message.' },
);

/** Path ids: bounded so an absurd id is a 400 before it reaches the store. */
export const PathId = ResourceId;

/** The error responses common to authenticated routes, for the OpenAPI document. */
export const authErrors = {
  400: ErrorResponse,
  401: ErrorResponse,
  422: ErrorResponse,
};

/** A free-form JSON value in a response (serialised as is). */
export const AnyJson = Type.Any();

/**
 * `schema` under a name in the OpenAPI document: a copy with `title`, which src/http/openapi.ts
 * turns into `components.schemas[title]` and a `$ref`. Validation and serialisation are unchanged.
 * Name a shape where it is defined (or where a route takes a domain shape as its body).
 */
export function named<T extends TSchema>(schema: T, title: string): T {
  return { ...schema, title };
}
