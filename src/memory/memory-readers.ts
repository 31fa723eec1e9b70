// The reader sets of a memory node: per key, each reader's value and expiry (what the read-write scripts keep in
// a sorted set on the set's own PTTL clock), with the same rules: a reader lives until its expiry, an
// extension never shortens one and never adds one, a set without readers is gone.

/**
 * The reader sets of one memory node, on the node's clock.
 */
export class ReaderSets {
  readonly #clock: { now(): number };
  readonly #sets = new Map<string, Map<string, number>>();

  /** Reader sets on `clock`. */
  constructor(clock: { now(): number }) {
    this.#clock = clock;
  }

  /** The live readers of `key` (value → ms left), the expired ones dropped. */
  live(key: string): Map<string, number> {
    const set = this.#sets.get(key);
    const now = this.#clock.now();
    const live = new Map<string, number>();
    if (!set) return live;
    for (const [value, expiresAt] of set) {
      if (expiresAt <= now) set.delete(value);
      else live.set(value, Math.ceil(expiresAt - now));
    }
    if (set.size === 0) this.#sets.delete(key);
    return live;
  }

  /** Adds a reader until `ttl` ms from now. */
  add(key: string, value: string, ttl: number): void {
    this.live(key);
    const set = this.#sets.get(key) ?? new Map<string, number>();
    this.#sets.set(key, set);
    set.set(value, this.#clock.now() + ttl);
  }

  /** Moves a live reader's expiry to at least `ttl` ms from now; false (nothing changed) when it is not live. */
  extend(key: string, value: string, ttl: number): boolean {
    if (!this.live(key).has(value)) return false;
    const set = this.#sets.get(key)!;
    set.set(value, Math.max(set.get(value)!, this.#clock.now() + ttl));
    return true;
  }

  /** Takes a reader out; true when it was live. */
  remove(key: string, value: string): boolean {
    const live = this.live(key).has(value);
    const set = this.#sets.get(key);
    set?.delete(value);
    if (set?.size === 0) this.#sets.delete(key);
    return live;
  }

  /** Forgets every set (a restart that lost its data). */
  clear(): void {
    this.#sets.clear();
  }
}
