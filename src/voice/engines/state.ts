/**
 * Copies of an engine's conversation state, for preemptive replies (ResponseEngine.checkpoint):
 * each engine keeps everything a turn changes in one plain object, and a checkpoint copies that
 * object whole, field by field as its copy rules say. The rules are a record over every field of
 * the state, so a field added to the state without a rule does not compile, and a field copied as
 * a value that holds a handle (a promise, a function, a class instance) throws at the checkpoint.
 */

/**
 * How a checkpoint copies one field of an engine's state:
 * - `value`: data the engine changes in place or replaces (variables, the history, counters,
 *   flags): copied deep. Arrays, plain objects (with their prototype: a prototype-free variable
 *   map stays prototype-free), Sets and Maps are copied; strings, numbers and the like are kept.
 *   A handle found inside throws: it needs one of the other rules.
 * - `shared`: a handle kept by reference and only ever replaced, never changed: a part of the
 *   definition the engine runs (a flow node, a service-LLM state), or an object holding a request
 *   that is still running (its promise must stay the one the request settles).
 * - `list`: a list of handles: a new list holding the same entries (so a rollback can tell the
 *   entries added since the checkpoint by identity).
 */
export type CopyRule = 'value' | 'shared' | 'list';

/** A copy rule for every field of a state `S` (optional fields included). */
export type CopyRules<S> = { readonly [K in keyof S]-?: CopyRule };

/**
 * A copy of `state` by its `rules`: what a checkpoint saves and a rollback puts back. Throws a
 * TypeError when the state has a field without a rule, or a `value` field holds a handle.
 */
export function copyState<S extends object>(state: S, rules: CopyRules<S>): S {
  const out: Record<string, unknown> = {};
  const fields = state as Record<string, unknown>;
  const ruleOf = rules as Readonly<Record<string, CopyRule>>;
  for (const key of Object.keys(fields)) {
    if (!Object.hasOwn(ruleOf, key)) throw new TypeError(`state field ${key} has no copy rule`);
  }
  for (const [key, rule] of Object.entries(ruleOf)) {
    if (!Object.hasOwn(fields, key)) continue;
    const v = fields[key];
    if (rule === 'shared') out[key] = v;
    else if (rule === 'list') {
      if (!Array.isArray(v)) throw new TypeError(`state field ${key} is copied as a list but is not one`);
      out[key] = [...(v as unknown[])];
    } else out[key] = copyValue(v, key);
  }
  return out as S;
}

/** A deep copy of data: arrays, plain and prototype-free objects, Sets, Maps; primitives as they are. */
function copyValue(v: unknown, path: string): unknown {
  if (typeof v === 'function') throw new TypeError(`state field ${path} holds a function: copy it 'shared'`);
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map((item, i) => copyValue(item, `${path}[${i}]`));
  if (v instanceof Set) return new Set([...(v as Set<unknown>)].map((item) => copyValue(item, `${path} entry`)));
  if (v instanceof Map) return new Map([...(v as Map<unknown, unknown>)].map(([k, item]) => [copyValue(k, `${path} key`), copyValue(item, `${path} entry`)]));
  const proto: unknown = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) {
    throw new TypeError(`state field ${path} holds a handle (${Object.prototype.toString.call(v)}): copy it 'shared' or 'list'`);
  }
  const out = Object.create(proto) as Record<string, unknown>;
  for (const [key, item] of Object.entries(v)) {
    // defineProperty, not assignment: an own `__proto__` field (JSON can make one) stays a field.
    Object.defineProperty(out, key, { value: copyValue(item, `${path}.${key}`), enumerable: true, writable: true, configurable: true });
  }
  return out;
}
