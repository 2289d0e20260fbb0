/// <reference lib="es2024.string" />
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errors, truncateForMessage } from '../domain/errors.ts';
import { MAX_JSON_DEPTH } from '../lib/bounded-json.ts';

/** How deep arrays and objects may nest in a body (the body itself is level 0): the one bound of JSON from outside. */
export const MAX_INPUT_DEPTH = MAX_JSON_DEPTH;

/** A string the service refuses, or nesting too deep: where it is (`body/notes`) and why. */
export interface InputProblem {
  /** The JSON path, as validation errors name fields: `body/metadata/note`, `querystring/id`. */
  path: string;
  message: string;
}

/**
 * The one rule for input at the edge, the same on both stores (docs/api.md, "Choices where the
 * contract is silent"): no string of a request, key or value, at any depth of the body, the query
 * string or the path parameters, may contain U+0000 (PostgreSQL text cannot hold it; SQLite can,
 * so without the rule the stores would differ) or a lone UTF-16 surrogate (not Unicode; both
 * stores would silently turn it into U+FFFD in text columns but keep it in JSON ones). And a body
 * nests at most `MAX_INPUT_DEPTH` levels: deeper values overflow the stack of JSON.stringify.
 * Such a request is refused with 400 `invalid_request` naming the field, before validation.
 *
 * A callback hook that walks without recursion, allocating only per container (paths are built
 * only for a refusal). Measured: 0.1 µs for a small body; about 40 µs for a create-web-call body
 * whose 50 KB of metadata are 500 fields (JSON.parse of that body takes about 100 µs).
 */
export function installInputGuard(app: FastifyInstance): void {
  app.addHook('preValidation', (request, _reply, done) => {
    const problem = requestProblem(request);
    done(problem ? errors.invalidRequest(problem.message) : undefined);
  });
}

/** The first refused string (or too deep nesting) of a request's body, query string and path parameters. */
export function requestProblem(request: Pick<FastifyRequest, 'body' | 'query' | 'params'>): InputProblem | null {
  return findInputProblem(request.body, 'body') ?? findInputProblem(request.query, 'querystring') ?? findInputProblem(request.params, 'params');
}

/** Why a string cannot be stored, or null. */
function textProblem(text: string): string | null {
  if (text.includes('\u0000')) return 'must not contain U+0000 (NUL)';
  if (!text.isWellFormed()) return 'must be valid Unicode (it has a lone UTF-16 surrogate)';
  return null;
}

/** A container still to walk: its value, and how it was reached (the path is built only on a refusal). */
interface Frame {
  value: object;
  parent: Frame | null;
  key: string | number;
  depth: number;
}

/** The frame's path, as validation errors name fields (JSON Pointer escaping), printable and bounded. */
function pathOf(frame: Frame, where: string): string {
  const segments: string[] = [];
  for (let at: Frame | null = frame; at?.parent; at = at.parent) {
    segments.push(typeof at.key === 'number' ? String(at.key) : truncateForMessage(at.key.replace(/~/g, '~0').replace(/\//g, '~1'), 64));
  }
  const path = [where, ...segments.reverse()].join('/');
  return path.length > 160 ? `${path.slice(0, 160)}...` : path;
}

/**
 * The first string in `value` (keys included, at any depth) that breaks the rule, or the first
 * container nested deeper than `maxDepth`; null when there is none. `where` starts the path.
 */
export function findInputProblem(value: unknown, where: string, maxDepth = MAX_INPUT_DEPTH): InputProblem | null {
  if (typeof value === 'string') {
    const problem = textProblem(value);
    return problem ? { path: where, message: `${where} ${problem}` } : null;
  }
  if (value === null || typeof value !== 'object') return null;
  const pending: Frame[] = [{ value, parent: null, key: '', depth: 0 }];
  const refuse = (frame: Frame, problem: string): InputProblem => {
    const path = pathOf(frame, where);
    return { path, message: `${path} ${problem}` };
  };
  // Returns the problem with `item` (found under `key` of `frame`), or null after queueing a container.
  const visit = (frame: Frame, key: string | number, item: unknown): InputProblem | null => {
    if (typeof item === 'string') {
      const problem = textProblem(item);
      return problem ? refuse({ value: frame.value, parent: frame, key, depth: frame.depth + 1 }, problem) : null;
    }
    if (item === null || typeof item !== 'object') return null;
    if (frame.depth >= maxDepth) return refuse(frame, `nests more than ${maxDepth} levels deep`);
    pending.push({ value: item, parent: frame, key, depth: frame.depth + 1 });
    return null;
  };
  for (let frame = pending.pop(); frame !== undefined; frame = pending.pop()) {
    if (Array.isArray(frame.value)) {
      const items: unknown[] = frame.value;
      for (let i = 0; i < items.length; i += 1) {
        const problem = visit(frame, i, items[i]);
        if (problem) return problem;
      }
      continue;
    }
    const object = frame.value as Record<string, unknown>;
    for (const key of Object.keys(object)) {
      const keyProblem = textProblem(key);
      if (keyProblem) return refuse(frame, `has a field name that ${keyProblem}`);
      const problem = visit(frame, key, object[key]);
      if (problem) return problem;
    }
  }
  return null;
}
