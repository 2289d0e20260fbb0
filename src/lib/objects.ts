/** A shallow copy without the keys whose value is undefined, so spreading it over defaults keeps them. */
export function withoutUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
