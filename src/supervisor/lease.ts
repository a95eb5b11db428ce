/**
 * One use of a supervised process. The holder must call `release()` when done; until then the
 * process is never closed for idleness, and a retired process waits for its last release before
 * it closes. `close()` of the supervisor and drains without a busy check still tear it down.
 */
export class Lease<P> {
  readonly #key: string;
  readonly #process: P;
  readonly #fingerprint: string;
  readonly #generation: number;
  readonly #onRelease: () => void;
  #released = false;

  constructor(key: string, process: P, fingerprint: string, generation: number, onRelease: () => void) {
    this.#key = key;
    this.#process = process;
    this.#fingerprint = fingerprint;
    this.#generation = generation;
    this.#onRelease = onRelease;
  }

  get key(): string {
    return this.#key;
  }

  get process(): P {
    return this.#process;
  }

  /** The fingerprint the process started from (the starter's report, else the lease's). */
  get fingerprint(): string {
    return this.#fingerprint;
  }

  /** The serial of the generation this lease holds (increases per start of the supervisor). */
  get generation(): number {
    return this.#generation;
  }

  get released(): boolean {
    return this.#released;
  }

  /** Gives the process back; idempotent, so `finally` blocks may call it unconditionally. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.#onRelease();
  }
}
