/**
 * An immutable map that shares the entries it did not change with the map it was derived from:
 * a derivation costs the changes, not the whole map (a Step beside a thousand children copies
 * none of them). Layers are kept in sizes that at least double from the top down — a derivation
 * merges the layers below it that are no larger than what it adds, like a binary counter — so an
 * entry is copied O(log n) times over its life and a lookup walks at most about log2(n) layers.
 */
export class SharedMap<V> {
  readonly #own: ReadonlyMap<string, V>;
  readonly #base: SharedMap<V> | undefined;

  private constructor(own: ReadonlyMap<string, V>, base: SharedMap<V> | undefined) {
    this.#own = own;
    this.#base = base;
    Object.freeze(this);
  }

  /** Takes ownership of `entries` (the caller must not change it afterwards). */
  static of<V>(entries: Map<string, V>): SharedMap<V> {
    return new SharedMap(entries, undefined);
  }

  get(key: string): V | undefined {
    for (let layer: SharedMap<V> | undefined = this; layer !== undefined; layer = layer.#base) {
      const value = layer.#own.get(key);
      if (value !== undefined) return value;
    }
    return undefined;
  }

  /** This map with `changes` set (taking ownership of `changes`). */
  with(changes: Map<string, V>): SharedMap<V> {
    if (changes.size === 0) return this;
    let base: SharedMap<V> | undefined = this;
    while (base !== undefined && base.#own.size <= changes.size) {
      for (const [key, value] of base.#own) if (!changes.has(key)) changes.set(key, value);
      base = base.#base;
    }
    return new SharedMap(changes, base);
  }
}
