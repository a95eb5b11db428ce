import { readFileSync, statSync } from 'node:fs';

export interface ReloadingFileOptions {
  /** Called once per new reason a reread failed (the last good value stays in force). */
  readonly onReloadError?: (error: Error) => void;
  /** Milliseconds (tests inject one); the file is looked at again at most once a second. */
  readonly now?: () => number;
}

/**
 * A credentials file read at start (a bad one is an error then, not an open door) and read again
 * when its modification time changes, at most once a second, so keys rotate without a restart. A
 * reread that fails keeps the last good value.
 */
export class ReloadingFile<T> {
  readonly #path: string;
  readonly #parse: (text: string) => T;
  readonly #onReloadError: (error: Error) => void;
  readonly #now: () => number;
  #value: T;
  #mtimeMs = -1;
  #checkedAt: number;
  #lastError = '';

  constructor(path: string, parse: (text: string) => T, options: ReloadingFileOptions = {}) {
    this.#path = path;
    this.#parse = parse;
    this.#onReloadError = options.onReloadError ?? (() => undefined);
    this.#now = options.now ?? Date.now;
    this.#checkedAt = this.#now();
    this.#value = this.#load();
  }

  /** The value parsed from the file as it is now (or as it last read well). */
  current(): T {
    const now = this.#now();
    if (now - this.#checkedAt >= 1_000) {
      this.#checkedAt = now;
      try {
        if (statSync(this.#path).mtimeMs !== this.#mtimeMs) this.#value = this.#load();
        this.#lastError = '';
      } catch (error) {
        const message = (error as Error).message;
        if (message !== this.#lastError) this.#onReloadError(error as Error);
        this.#lastError = message;
      }
    }
    return this.#value;
  }

  #load(): T {
    const mtimeMs = statSync(this.#path).mtimeMs;
    const value = this.#parse(readFileSync(this.#path, 'utf8'));
    this.#mtimeMs = mtimeMs;
    return value;
  }
}
