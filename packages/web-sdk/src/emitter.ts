/** A minimal typed event emitter: `on`, `off`, `once`, `emit`. Listener errors never break the SDK. */
export class TypedEmitter<Events extends { [K in keyof Events]: (...args: any[]) => void }> {
  readonly #listeners = new Map<keyof Events, Set<Events[keyof Events]>>();

  on<K extends keyof Events>(event: K, listener: Events[K]): this {
    let set = this.#listeners.get(event);
    if (!set) this.#listeners.set(event, (set = new Set()));
    set.add(listener);
    return this;
  }

  off<K extends keyof Events>(event: K, listener: Events[K]): this {
    this.#listeners.get(event)?.delete(listener);
    return this;
  }

  once<K extends keyof Events>(event: K, listener: Events[K]): this {
    const wrapper = ((...args: Parameters<Events[K]>) => {
      this.off(event, wrapper);
      listener(...args);
    }) as Events[K];
    return this.on(event, wrapper);
  }

  /** Removes every listener of `event`, or of every event. */
  removeAllListeners(event?: keyof Events): this {
    if (event === undefined) this.#listeners.clear();
    else this.#listeners.delete(event);
    return this;
  }

  protected emit<K extends keyof Events>(event: K, ...args: Parameters<Events[K]>): void {
    const set = this.#listeners.get(event);
    if (!set) return;
    for (const listener of [...set]) {
      try {
        (listener as (...a: Parameters<Events[K]>) => void)(...args);
      } catch (error) {
        // A throwing listener must not stop the call or the other listeners.
        setTimeout(() => {
          throw error;
        });
      }
    }
  }
}
