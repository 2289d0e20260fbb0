import type { ResponseEngine } from './engines/types.ts';

/** `engine` with some of its methods replaced by `overrides`; every other member is the engine's own (methods bound to it). */
export function overrideEngine(engine: ResponseEngine, overrides: Partial<ResponseEngine>): ResponseEngine {
  return new Proxy(engine, {
    get(target, property, receiver) {
      if (Object.hasOwn(overrides, property)) return overrides[property as keyof ResponseEngine];
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
