import type { Logger } from 'pino';
import type { EffectRequest } from '../../kernel/index.js';
import { type TimerEntry, type TimerIndex, timerMember } from '../../store/timer-index.js';
import type { TimerKind } from './timer-effects.js';

/**
 * Wall-clock time and one timer, injectable for tests (defaults: `Date.now`, `setTimeout`). The timer
 * is not unref'd: a process waiting on a timer keeps its Host's process alive, as the sleep it
 * replaces did (a Host used without an HTTP server would otherwise exit mid-sleep); the Host's
 * shutdown stops it.
 */
export interface TimerClock {
  /** Epoch milliseconds (instants are absolute: a monotonic clock would not survive a restart). */
  now(): number;
  setTimer(callback: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
}

export const systemTimerClock: TimerClock = Object.freeze({
  now: () => Date.now(),
  setTimer: (callback: () => void, ms: number) => setTimeout(callback, ms),
  clearTimer: (handle: unknown) => clearTimeout(handle as ReturnType<typeof setTimeout>),
});

/** What waking a tree for a due timer came to. */
export type WakeOutcome =
  /** Restored (or already held) here: the replayed timer settles at once. */
  | 'woken'
  /** A live other node owns the tree: its own sweeper wakes it. */
  | 'elsewhere'
  /** The head no longer holds the timer pending (settled, the process finished, the tree purged). */
  | 'stale';

export interface TimerServiceOptions {
  readonly index: TimerIndex;
  /** The instants this node fixed or adopted (the timer writer's memory). */
  readonly dueOf: (root: string, processId: string, effectId: string) => number | undefined;
  /** Brings the tree of a due timer back to a runtime (restore on demand, routed as a command). */
  readonly wake: (entry: TimerEntry) => Promise<WakeOutcome>;
  /** Whether the tree is in this node's memory (its dispatch then waits here, not on a wake). */
  readonly isResident: (root: string) => boolean;
  readonly clock?: TimerClock;
  /** How often the index is read for timers due soon (default 1000 ms; 0: never, tests poll by hand). */
  readonly pollMs?: number;
  readonly logger?: Logger;
  readonly metrics?: { fired(): void; woken(): void; waiting(count: number): void };
}

/** A stale entry (its head does not hold the timer) is removed only this long after its instant: its commit may still be in flight. */
const staleGraceMs = 60_000;
/** setTimeout's longest delay. */
const maxTimerMs = 2_147_483_647;
/** Entries one poll schedules at most. */
const pollLimit = 1_000;

interface Scheduled {
  readonly dueMs: number;
  run: () => void;
  cancelled: boolean;
}

const noop = (): void => undefined;

/**
 * The Host's timer service (docs/host.md "Durable timers"). Two kinds of work, on one JS timer for
 * the whole node (never one per tree):
 *
 * - **Dispatches waiting here.** A timer dispatch registers its due instant ({@link until}) and is
 *   settled when the instant comes. The tree may hibernate meanwhile (the dispatch is parkable: the
 *   kernel aborts it with `tree_released`, and its waiter goes).
 * - **Trees waiting nowhere.** Every {@link poll} period the index is read for timers due before the
 *   next poll ends; each is woken at its instant unless its tree is in memory here: restored on
 *   demand, routed like a command (on a live other owner it is left to that node's service; an
 *   ownerless tree is restored here). The restore replays the pending timer, which finds its instant
 *   passed and settles at once.
 *
 * Every node runs this; two nodes waking one tree race only to a guarded activation (one wins, the
 * other follows the owner), and the settlement is the kernel's: one settled boundary per Effect for
 * the tree's lifetime, behind the head's compare-and-swap. So a timer settles once however many
 * services see its entry, which is only a hint.
 */
export class TimerService {
  readonly #index: TimerIndex;
  readonly #dueOf: TimerServiceOptions['dueOf'];
  readonly #wake: TimerServiceOptions['wake'];
  readonly #isResident: (root: string) => boolean;
  readonly #clock: TimerClock;
  readonly #pollMs: number;
  readonly #logger: Logger | undefined;
  readonly #metrics: TimerServiceOptions['metrics'];
  /** A binary min-heap by due instant; cancelled items are skipped when they surface. */
  readonly #heap: Scheduled[] = [];
  /** Index members scheduled for a wake (not yet run). */
  readonly #scheduled = new Map<string, Scheduled>();
  #waiting = 0;
  #armed: { readonly handle: unknown; readonly atMs: number } | undefined;
  #pollTimer: NodeJS.Timeout | undefined;
  #polling: Promise<number> | undefined;
  #stopped = false;

  constructor(options: TimerServiceOptions) {
    this.#index = options.index;
    this.#dueOf = options.dueOf;
    this.#wake = options.wake;
    this.#isResident = options.isResident;
    this.#clock = options.clock ?? systemTimerClock;
    this.#pollMs = options.pollMs ?? 1_000;
    this.#logger = options.logger;
    this.#metrics = options.metrics;
    if (!Number.isSafeInteger(this.#pollMs) || this.#pollMs < 0) throw new TypeError('pollMs must be a non-negative integer');
  }

  /** Dispatches waiting here for their instant. */
  get waiting(): number {
    return this.#waiting;
  }

  /**
   * The due instant of a timer request: the one its pending commit fixed (or its activation adopted),
   * else — a request this Host never committed — `kind.dueOf` now.
   */
  dueOf(request: EffectRequest, kind: TimerKind): number | undefined {
    const fixed = this.#dueOf(request.relation.rootId.toString(), request.processId.toString(), request.id.toString());
    return fixed ?? kind.dueOf(request.effect, this.#clock.now());
  }

  /** Resolves at `dueMs` (at once when it has passed); rejects with the reason as soon as `signal` aborts. */
  until(dueMs: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    if (dueMs <= this.#clock.now()) {
      this.#metrics?.fired();
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        // The item stays in the heap until its instant surfaces; it must not keep the released runtime reachable.
        item.cancelled = true;
        item.run = noop;
        this.#countWaiting(-1);
        // Re-armed for the earliest live item: a timer kept for a cancelled one would hold the process.
        this.#arm();
        reject(signal.reason);
      };
      const item: Scheduled = {
        dueMs,
        cancelled: false,
        run: () => {
          signal.removeEventListener('abort', onAbort);
          this.#countWaiting(-1);
          this.#metrics?.fired();
          resolve();
        },
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#countWaiting(1);
      this.#push(item);
    });
  }

  start(): void {
    this.#stopped = false;
    if (this.#pollMs === 0 || this.#pollTimer !== undefined) return;
    this.#pollTimer = setInterval(() => void this.poll(), this.#pollMs);
    this.#pollTimer.unref();
    void this.poll();
  }

  /** Stops polling and waking (dispatches still waiting end with the Host's dispatch stop). */
  stop(): void {
    this.#stopped = true;
    clearInterval(this.#pollTimer);
    this.#pollTimer = undefined;
    for (const item of this.#scheduled.values()) {
      item.cancelled = true;
      item.run = noop;
    }
    this.#scheduled.clear();
    if (this.#armed !== undefined) this.#clock.clearTimer(this.#armed.handle);
    this.#armed = undefined;
  }

  /**
   * Reads the index for timers due before the next poll ends and schedules a wake at each one's
   * instant (one poll at a time); resolves how many it scheduled.
   */
  poll(): Promise<number> {
    this.#polling ??= this.#poll().finally(() => {
      this.#polling = undefined;
    });
    return this.#polling;
  }

  async #poll(): Promise<number> {
    if (this.#stopped) return 0;
    let entries: TimerEntry[];
    try {
      entries = await this.#index.dueBy(this.#clock.now() + 2 * Math.max(this.#pollMs, 1), pollLimit);
    } catch (error) {
      this.#logger?.warn({ err: error }, 'the timer index could not be read; due timers wait for the next poll');
      return 0;
    }
    let scheduled = 0;
    for (const entry of entries) {
      const member = timerMember(entry);
      if (this.#stopped || this.#scheduled.has(member)) continue;
      const item: Scheduled = { dueMs: entry.dueMs, cancelled: false, run: () => this.#due(member, entry) };
      this.#scheduled.set(member, item);
      this.#push(item);
      scheduled += 1;
    }
    return scheduled;
  }

  #due(member: string, entry: TimerEntry): void {
    this.#scheduled.delete(member);
    // In memory here: its own dispatch waits for the instant (or is about to start and finds it passed).
    if (this.#stopped || this.#isResident(entry.rootId)) return;
    void this.#wake(entry).then(
      async (outcome) => {
        if (outcome === 'woken') this.#metrics?.woken();
        if (outcome === 'stale' && entry.dueMs < this.#clock.now() - staleGraceMs) await this.#index.remove([entry]);
      },
      (error: unknown) => this.#logger?.warn({ err: error, rootId: entry.rootId, effectId: entry.effectId }, 'a tree with a due timer could not be woken; the next poll tries again'),
    );
  }

  #countWaiting(delta: number): void {
    this.#waiting += delta;
    this.#metrics?.waiting(this.#waiting);
  }

  // -------------------------------------------------------------------------------------------
  // One timer for the earliest item

  #push(item: Scheduled): void {
    const heap = this.#heap;
    heap.push(item);
    let at = heap.length - 1;
    while (at > 0) {
      const parent = (at - 1) >>> 1;
      if ((heap[parent] as Scheduled).dueMs <= item.dueMs) break;
      heap[at] = heap[parent] as Scheduled;
      at = parent;
    }
    heap[at] = item;
    this.#arm();
  }

  #pop(): Scheduled | undefined {
    const heap = this.#heap;
    const top = heap[0];
    const last = heap.pop();
    if (top === undefined || last === undefined || heap.length === 0) return top;
    let at = 0;
    for (;;) {
      const left = 2 * at + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && (heap[right] as Scheduled).dueMs < (heap[left] as Scheduled).dueMs ? right : left;
      if ((heap[child] as Scheduled).dueMs >= last.dueMs) break;
      heap[at] = heap[child] as Scheduled;
      at = child;
    }
    heap[at] = last;
    return top;
  }

  /** Arms the one timer for the earliest live item (re-armed when an earlier one arrives). */
  #arm(): void {
    while (this.#heap[0]?.cancelled === true) this.#pop();
    const next = this.#heap[0];
    if (next === undefined) {
      if (this.#armed !== undefined) this.#clock.clearTimer(this.#armed.handle);
      this.#armed = undefined;
      return;
    }
    if (this.#armed !== undefined && this.#armed.atMs <= next.dueMs) return;
    if (this.#armed !== undefined) this.#clock.clearTimer(this.#armed.handle);
    const now = this.#clock.now();
    const delay = Math.min(Math.max(next.dueMs - now, 0), maxTimerMs);
    this.#armed = { handle: this.#clock.setTimer(() => this.#fire(), delay), atMs: now + delay };
  }

  /** Runs every item due by now, then arms for the next. */
  #fire(): void {
    this.#armed = undefined;
    const now = this.#clock.now();
    for (let next = this.#heap[0]; next !== undefined && next.dueMs <= now; next = this.#heap[0]) {
      this.#pop();
      if (!next.cancelled) next.run();
    }
    this.#arm();
  }
}
