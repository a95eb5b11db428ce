import type { Logger } from 'pino';

export interface HibernationOptions {
  /** A tree idle this long is offered for release (0: never). */
  readonly afterMs: number;
  /** Releases `root` if the Engine finds it parked; resolves whether it did. */
  readonly release: (root: string) => Promise<boolean>;
  /** Monotonic milliseconds (tests inject one). */
  readonly now?: () => number;
  readonly logger?: Logger;
}

/**
 * Idle tracking for hibernation (docs/host.md "Hibernation"): every tree this node holds is kept in
 * order of its last activity (a commit's event or delta, a command), oldest first, so a sweep visits
 * only the trees that have been idle long enough and stops at the first that has not. Whether an
 * idle tree may go is the Engine's decision (only a parked one, and never with a command queued);
 * one that may not is looked at again a period later. Released trees stay authoritative in the
 * store; the next command restores them.
 */
export class Hibernation {
  readonly #afterMs: number;
  readonly #release: (root: string) => Promise<boolean>;
  readonly #now: () => number;
  readonly #logger: Logger | undefined;
  /** Root → last activity; Map order is activity order (touch re-inserts). */
  readonly #idleSince = new Map<string, number>();
  #timer: NodeJS.Timeout | undefined;
  #sweeping: Promise<number> | undefined;

  constructor(options: HibernationOptions) {
    if (!Number.isSafeInteger(options.afterMs) || options.afterMs < 0) throw new TypeError('afterMs must be a non-negative integer');
    this.#afterMs = options.afterMs;
    this.#release = options.release;
    this.#now = options.now ?? (() => performance.now());
    this.#logger = options.logger;
  }

  get enabled(): boolean {
    return this.#afterMs > 0;
  }

  /** Sweep period: a tree leaves between `afterMs` and `afterMs` + one period after its last activity. */
  get periodMs(): number {
    return Math.max(25, Math.min(Math.ceil(this.#afterMs / 4), 30_000));
  }

  /** Notes activity on a tree held here. */
  touch(root: string): void {
    if (!this.enabled) return;
    this.#idleSince.delete(root);
    this.#idleSince.set(root, this.#now());
  }

  /** The tree left this node's memory some other way (released, purged, fenced). */
  forget(root: string): void {
    this.#idleSince.delete(root);
  }

  /** Trees tracked (held here and not yet released). */
  get tracked(): number {
    return this.#idleSince.size;
  }

  start(): void {
    if (!this.enabled || this.#timer !== undefined) return;
    this.#timer = setInterval(() => {
      void this.sweep();
    }, this.periodMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Offers every tree idle for `afterMs` for release (one sweep at a time); resolves how many left. */
  sweep(): Promise<number> {
    if (!this.enabled) return Promise.resolve(0);
    this.#sweeping ??= this.#sweep().finally(() => {
      this.#sweeping = undefined;
    });
    return this.#sweeping;
  }

  async #sweep(): Promise<number> {
    const cutoff = this.#now() - this.#afterMs;
    // Only the trees idle at the sweep's start: those touched meanwhile moved behind them.
    const due: string[] = [];
    for (const [root, since] of this.#idleSince) {
      if (since > cutoff) break;
      due.push(root);
    }
    let released = 0;
    for (const root of due) {
      const since = this.#idleSince.get(root);
      if (since === undefined || since > cutoff) continue;
      let gone = false;
      try {
        gone = await this.#release(root);
      } catch (error) {
        this.#logger?.warn({ err: error, rootId: root }, 'hibernation of an idle tree failed; it stays in memory');
      }
      if (this.#idleSince.get(root) !== since) continue;
      if (gone) {
        this.#idleSince.delete(root);
        released += 1;
      } else {
        // Not parked (a dispatch in flight, a capture): look again a whole period later.
        this.touch(root);
      }
    }
    if (released > 0) this.#logger?.debug({ released, resident: this.#idleSince.size }, 'idle trees hibernated');
    return released;
  }
}
