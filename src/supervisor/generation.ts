import { deferred, type Deferred } from '../kernel/deferred.js';
import type { Lease } from './lease.js';
import type { SupervisedProcess } from './supervised-process.js';

/**
 * The lifecycle of one process generation, one way only:
 *
 * ```
 * starting ──► live ──► retired ──► closing ──► gone
 *    │                                 ▲          ▲
 *    ├── abandoned (timeout/close/drain)┘          │
 *    └── start failed ─────────────────────────────┘
 * ```
 *
 * - `starting`: the starter runs; leases with the same fingerprint wait on it.
 * - `live`: the key's current process; it takes new leases.
 * - `retired`: takes no new leases; closes once its last lease is released.
 * - `closing`: the process is being closed (or an abandoned start is awaited, so a process it
 *   still returns is closed rather than leaked).
 * - `gone`: nothing of it runs any more.
 */
export type GenerationState = 'starting' | 'live' | 'retired' | 'closing' | 'gone';

export const generationStateValues: readonly GenerationState[] = Object.freeze(['starting', 'live', 'retired', 'closing', 'gone']);

/** A lease waiting on a start. */
export type StartWaiter<P> = Deferred<Lease<P>>;

/**
 * One start of one key and the process it produced. Each state is entered by exactly one method
 * below (`goLive`, `retire`, `close`/`abandon`, `#finish`), and `#enter` refuses any move that is
 * not forward along the lifecycle. The Supervisor owns the bookkeeping around it (which
 * generation is a key's current one); the generation owns its state, leases and waiters.
 */
export class Generation<P extends SupervisedProcess> {
  readonly key: string;
  readonly serial: number;
  #state: GenerationState = 'starting';
  #fingerprint: string;
  #process: P | undefined;
  #leases = 0;
  #idleSince: number;
  #retireWhenLive = false;
  readonly #waiters = new Set<StartWaiter<P>>();
  readonly #startAbort = new AbortController();
  readonly #settled = deferred<void>();
  readonly #gone = deferred<void>();
  readonly #onGone: (generation: Generation<P>) => void;

  constructor(key: string, fingerprint: string, serial: number, now: number, onGone: (generation: Generation<P>) => void) {
    this.key = key;
    this.serial = serial;
    this.#fingerprint = fingerprint;
    this.#idleSince = now;
    this.#onGone = onGone;
  }

  get state(): GenerationState {
    return this.#state;
  }

  /** The lease's fingerprint while starting; the one it started from afterwards. */
  get fingerprint(): string {
    return this.#fingerprint;
  }

  /** The process, once the start produced one. */
  get process(): P | undefined {
    return this.#process;
  }

  get leases(): number {
    return this.#leases;
  }

  /** When the last lease was released (or the process went live unleased). */
  get idleSince(): number {
    return this.#idleSince;
  }

  /** The start's signal (see `StartContext.signal`). */
  get startSignal(): AbortSignal {
    return this.#startAbort.signal;
  }

  /** Resolves when the start is over, whichever way (never rejects). */
  get settled(): Promise<void> {
    return this.#settled.promise;
  }

  /** Resolves when the generation is gone (never rejects). */
  get gone(): Promise<void> {
    return this.#gone.promise;
  }

  /** True for a live process that has died (exited or killed) but was not noticed yet. */
  get dead(): boolean {
    return this.#process !== undefined && this.#process.isDone;
  }

  /** Whether a lease for `fingerprint` may wait on this start and take its process. */
  joinable(fingerprint: string): boolean {
    return this.#state === 'starting' && !this.#retireWhenLive && this.#fingerprint === fingerprint;
  }

  /** True once `retire` was asked for while starting: the start's waiters get it, nobody else. */
  get retireWhenLive(): boolean {
    return this.#retireWhenLive;
  }

  // -------------------------------------------------------------------------------------------
  // Waiters and leases

  join(waiter: StartWaiter<P>): void {
    this.#waiters.add(waiter);
  }

  /** Withdraws a waiter (its lease was aborted); true if it was still waiting. */
  leave(waiter: StartWaiter<P>): boolean {
    return this.#waiters.delete(waiter);
  }

  acquire(): void {
    if (this.#state !== 'live') throw invariant(this, `cannot lease a ${this.#state} generation`);
    this.#leases += 1;
  }

  /** Counts a release; returns true when a retired generation just lost its last lease. */
  release(now: number): boolean {
    if (this.#leases === 0) return false;
    this.#leases -= 1;
    if (this.#leases > 0) return false;
    this.#idleSince = now;
    return this.#state === 'retired';
  }

  /** Marks a starting generation to retire as soon as it is live (see {@link retireWhenLive}). */
  requestRetire(): void {
    if (this.#state === 'starting') this.#retireWhenLive = true;
  }

  // -------------------------------------------------------------------------------------------
  // Transitions

  /**
   * starting → live: the start produced `process`. Every waiter is counted as a lease here, in the
   * same turn, so nothing can close the process between the start and its waiters; the caller
   * hands each returned waiter its lease.
   */
  goLive(process: P, fingerprint: string, now: number): StartWaiter<P>[] {
    this.#enter('live', ['starting']);
    this.#process = process;
    this.#fingerprint = fingerprint;
    this.#idleSince = now;
    const waiters = this.#takeWaiters();
    this.#leases += waiters.length;
    this.#settled.resolve();
    return waiters;
  }

  /** live → retired: no new leases; the caller closes it once it is unleased. */
  retire(): void {
    this.#enter('retired', ['live']);
  }

  /**
   * retired → closing → gone: closes the process, then the generation is gone. Errors of
   * `process.close()` go to `onError`; the generation is gone regardless, since a process whose
   * close failed can still not be used again.
   */
  close(onError: (error: unknown) => void): Promise<void> {
    this.#enter('closing', ['retired']);
    const process = this.#process as P;
    void closeQuietly(process, onError).then(() => this.#finish());
    return this.#gone.promise;
  }

  /**
   * starting → closing: the start is abandoned (timeout, close, drain). Its signal aborts with
   * `reason` and the returned waiters are to be refused; the generation stays `closing` until
   * {@link abandoned} reports how the starter ended, so a late process is closed, not leaked.
   */
  abandon(reason: unknown): StartWaiter<P>[] {
    this.#enter('closing', ['starting']);
    const waiters = this.#takeWaiters();
    this.#startAbort.abort(reason);
    this.#settled.resolve();
    return waiters;
  }

  /** closing → gone, for an abandoned start once its starter returned (a late `process` is closed first). */
  abandoned(process: SupervisedProcess | undefined, onError: (error: unknown) => void): void {
    if (this.#state !== 'closing' || this.#process !== undefined) throw invariant(this, 'only an abandoned start ends this way');
    if (process === undefined) {
      this.#finish();
      return;
    }
    void closeQuietly(process, onError).then(() => this.#finish());
  }

  /** starting → gone: the start failed; the returned waiters are to be refused with its error. */
  failStart(): StartWaiter<P>[] {
    const waiters = this.#takeWaiters();
    this.#settled.resolve();
    this.#finish(['starting']);
    return waiters;
  }

  #finish(from: readonly GenerationState[] = ['closing']): void {
    this.#enter('gone', from);
    this.#gone.resolve();
    this.#onGone(this);
  }

  #takeWaiters(): StartWaiter<P>[] {
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    return waiters;
  }

  /** The only writer of `#state`: moves strictly forward, from one of the allowed states. */
  #enter(to: GenerationState, from: readonly GenerationState[]): void {
    if (!from.includes(this.#state)) throw invariant(this, `illegal transition ${this.#state} → ${to}`);
    this.#state = to;
  }

  toString(): string {
    return `${this.key}#${this.serial}`;
  }
}

async function closeQuietly(process: SupervisedProcess, onError: (error: unknown) => void): Promise<void> {
  try {
    await process.close();
  } catch (error) {
    onError(error);
  }
}

function invariant(generation: { toString(): string }, message: string): Error {
  return new Error(`supervisor invariant: generation ${generation.toString()}: ${message}`);
}
