import type { CustomFunction } from '../../domain/custom-function.ts';
import { abortable } from '../../lib/abortable.ts';
import type { FunctionCaller, FunctionOutcome } from './types.ts';

/**
 * Calls a function through `caller` (none: the function is unavailable); a caller that breaks its
 * promise never to reject gives an error outcome too, so a request nobody waits for any more
 * cannot become an unhandled rejection.
 */
export function callFunction(caller: FunctionCaller | undefined, fn: CustomFunction, args: Record<string, unknown>): Promise<FunctionOutcome> {
  if (!caller) return Promise.resolve({ ok: false, content: 'error: custom functions are not available', error: 'unavailable', durationMs: 0 });
  return caller.call(fn, args).catch((error: unknown) => ({
    ok: false,
    content: `error: ${error instanceof Error ? error.message : 'the request failed'}`,
    error: 'network',
    durationMs: 0,
  }));
}

/**
 * Waits until the user's turn is confirmed (a preemptive reply's, RespondOptions.confirmed), or
 * throws the abort when the signal fires first. Engines call it before every side effect.
 */
export async function confirmedTurn(confirmed: Promise<void> | undefined, signal: AbortSignal): Promise<void> {
  if (confirmed) await abortable(confirmed, signal);
}

/**
 * Arguments rendered from templates (strings), typed by the function's `parameters`: a property
 * declared `number`/`integer` or `boolean` gets a number or boolean when the text reads as one.
 */
export function typedArgs(parameters: Record<string, unknown> | undefined, rendered: Record<string, string>): Record<string, unknown> {
  const properties = (parameters?.['properties'] ?? {}) as Record<string, { type?: unknown } | undefined>;
  const out: Record<string, unknown> = {};
  for (const [name, text] of Object.entries(rendered)) {
    const type = properties[name]?.type;
    const trimmed = text.trim();
    if ((type === 'number' || type === 'integer') && trimmed !== '' && Number.isFinite(Number(trimmed))) out[name] = Number(trimmed);
    else if (type === 'boolean' && /^(true|false)$/i.test(trimmed)) out[name] = trimmed.toLowerCase() === 'true';
    else out[name] = text;
  }
  return out;
}

/**
 * Reads a path such as `order.status`, `items[0].name` or `$.order.status` in a JSON value;
 * undefined when any step is missing.
 */
export function jsonPath(value: unknown, path: string): unknown {
  const steps = path.replace(/^\$\.?/, '').split(/\.|\[(\d+)\]/).filter((s) => s !== undefined && s !== '');
  let at = value;
  for (const step of steps) {
    if (at === null || typeof at !== 'object') return undefined;
    // Own fields only: `constructor` or `__proto__` in a path is a field the answer lacks, not Object's.
    if (Array.isArray(at)) at = /^\d+$/.test(step) ? at[Number(step)] : undefined;
    else at = Object.hasOwn(at, step) ? (at as Record<string, unknown>)[step] : undefined;
  }
  return at;
}

/**
 * Stores a function's `response_variables` (`{"variable": "json.path"}`) from its JSON answer in
 * `into`: strings as they are, other values as JSON text; a path the answer lacks removes the
 * variable. Returns null on success, or the failure: the outcome's own error, or `invalid_json`
 * when variables were asked for and the answer is not (complete) JSON.
 */
export function applyResponseVariables(
  responseVariables: Readonly<Record<string, string>> | undefined,
  outcome: FunctionOutcome,
  into: Record<string, string>,
): string | null {
  if (!outcome.ok) return outcome.error ?? 'error';
  const wanted = Object.entries(responseVariables ?? {});
  if (wanted.length === 0) return null;
  if (outcome.json === undefined) return 'invalid_json';
  for (const [name, path] of wanted) {
    const v = jsonPath(outcome.json, path);
    if (v === undefined || v === null) delete into[name];
    // The answer was parsed within the JSON depth bound (lib/bounded-json.ts), so it serialises.
    else into[name] = typeof v === 'string' ? v : (JSON.stringify(v) ?? '');
  }
  return null;
}
