import { deferred } from '../kernel/deferred.js';

/** Which keys a drain covers: one exact key, or a predicate over keys. */
export type KeyMatch = string | ((key: string) => boolean);

/**
 * The hold a drain places on its keys: no process of a matching key starts until `release()`.
 * Two drains conflict when some key matches both; a predicate cannot be intersected with another,
 * so conflicts are decided over the keys the supervisor knows plus the keys each hold drained or
 * names exactly.
 */
export class DrainHold {
  readonly #match: (key: string) => boolean;
  /** The exact key, for a drain of one key. */
  readonly exactKey: string | undefined;
  /** Keys this drain closed processes of. */
  readonly drainedKeys: ReadonlySet<string>;
  readonly #released = deferred<void>();
  #active = true;

  constructor(match: KeyMatch, drainedKeys: Iterable<string>) {
    this.exactKey = typeof match === 'string' ? match : undefined;
    this.#match = typeof match === 'string' ? (key) => key === match : match;
    this.drainedKeys = new Set(drainedKeys);
  }

  matches(key: string): boolean {
    return this.#active && this.#match(key);
  }

  /** Keys worth testing for a conflict with another drain. */
  sampleKeys(): string[] {
    return this.exactKey === undefined ? [...this.drainedKeys] : [this.exactKey, ...this.drainedKeys];
  }

  get active(): boolean {
    return this.#active;
  }

  /** Resolves when the hold is released. */
  get released(): Promise<void> {
    return this.#released.promise;
  }

  /** Lets starts of the matching keys proceed again; idempotent. */
  release(): void {
    if (!this.#active) return;
    this.#active = false;
    this.#released.resolve();
  }
}

/** Turns a {@link KeyMatch} into a predicate. */
export function keyPredicate(match: KeyMatch): (key: string) => boolean {
  return typeof match === 'string' ? (key) => key === match : match;
}
