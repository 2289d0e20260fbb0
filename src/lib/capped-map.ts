/**
 * A Map that holds at most `max` entries: adding a new key to a full map first drops the oldest
 * entry (insertion order). For the in-memory caches that must not grow with the data.
 */
export class CappedMap<K, V> extends Map<K, V> {
  readonly #max: number;

  constructor(max: number) {
    super();
    this.#max = max;
  }

  override set(key: K, value: V): this {
    if (this.size >= this.#max && !this.has(key)) this.delete(this.keys().next().value as K);
    return super.set(key, value);
  }
}
