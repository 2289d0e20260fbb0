import type { CallVariables } from './types.ts';

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g;

/**
 * Replaces `{{name}}` with its value. Unknown variables become '' in speech (`missing: 'empty'`,
 * the default: nobody wants to hear braces) or stay as written (`missing: 'keep'`).
 */
export function renderTemplate(template: string, vars: Readonly<Record<string, string>>, missing: 'empty' | 'keep' = 'empty'): string {
  return template.replace(PLACEHOLDER, (whole, name: string) => {
    const v = variable(vars, name);
    return v !== undefined ? v : missing === 'keep' ? whole : '';
  });
}

/**
 * A variable's value: own entries only, so that `constructor`, `toString` or `__proto__` are
 * variables like any other name (unset unless set), never Object's built-in properties.
 */
export function variable(vars: Readonly<Record<string, string>>, name: string): string | undefined {
  if (!Object.hasOwn(vars, name)) return undefined;
  const v = vars[name];
  return typeof v === 'string' ? v : undefined;
}

/** An empty map of variables, without a prototype (`vars.constructor` is undefined). */
export function variableMap(): Record<string, string> {
  return Object.create(null) as Record<string, string>;
}

/** Names referenced by `{{...}}` in a template. */
export function templateVariables(template: string): string[] {
  return [...template.matchAll(PLACEHOLDER)].map((m) => m[1] ?? '');
}

/**
 * Resolves variables in precedence order (later wins): the engine's default_dynamic_variables,
 * the call's service_llm_dynamic_variables, values the flow extracted from the user's words,
 * then override_dynamic_variables. Non-string values are stringified.
 */
export function resolveVariables(
  defaults: Readonly<Record<string, string>> | undefined,
  call: CallVariables | undefined,
  extracted: Readonly<Record<string, string>> = {},
): Record<string, string> {
  const out = variableMap();
  for (const layer of [defaults, call?.dynamic, extracted, call?.overrides]) {
    if (!layer) continue;
    for (const [k, v] of Object.entries(layer)) if (v !== null && v !== undefined) out[k] = String(v);
  }
  return out;
}
