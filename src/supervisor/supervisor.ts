import { abortable, deferred } from '../kernel/deferred.js';
import { DrainHold, keyPredicate, type KeyMatch } from './drain-hold.js';
import { SupervisorError, SupervisorErrorCode } from './errors.js';
import { Generation, type GenerationState, type StartWaiter } from './generation.js';
import { Lease } from './lease.js';
import { isSupervisedProcess, type Started, type Starter, type SupervisedProcess } from './supervised-process.js';
import { maxTimerMs, systemTimers, type Timer, type Timers } from './timers.js';

/** Options of a {@link Supervisor}; omitted members take the defaults below. */
export interface SupervisorOptions {
  /** Close a live process that has been unleased at least this long (default 10 minutes). */
  readonly idleTtlMs?: number;
  /** Bound one start (default 30 seconds). It bounds the start, never the process. */
  readonly startTimeoutMs?: number;
  /** How often the reconcile loop closes idle and dead processes (default 15 seconds). */
  readonly reconcileEveryMs?: number;
  /** The clock and timers (default {@link systemTimers}); tests pass a manual implementation. */
  readonly timers?: Timers;
  /** Reports a process whose `close()` failed; the generation is gone regardless. */
  readonly onCloseError?: (key: string, error: unknown) => void;
}

export const defaultSupervisorOptions = Object.freeze({
  idleTtlMs: 10 * 60_000,
  startTimeoutMs: 30_000,
  reconcileEveryMs: 15_000,
});

export interface LeaseOptions {
  /** Gives up waiting (on a start, or a drain's hold) with the signal's reason. */
  readonly signal?: AbortSignal;
}

export interface DrainOptions {
  /** Bounds the wait for the drained processes to exit; the hold is released when it aborts. */
  readonly signal?: AbortSignal;
}

export interface CloseOptions {
  /** The deadline of the wait for every generation to be gone. */
  readonly signal?: AbortSignal;
}

/** Whether a process is at work (a drain refuses then). */
export type BusyCheck<P> = (process: P, key: string) => boolean;

/** A diagnostic view of one generation. */
export interface GenerationInfo {
  readonly key: string;
  readonly serial: number;
  readonly state: GenerationState;
  readonly fingerprint: string;
  readonly leases: number;
  /** Whether it is the key's current generation (the one new leases get). */
  readonly current: boolean;
}

/**
 * Owns every process generation of every key: the current one and those retired but still
 * leased. Drivers say how to start a process and which configuration (fingerprint) it would start
 * from; when a process is started, shared, replaced, closed for idleness or torn down is decided
 * here, in one place. The rules:
 *
 * - Every use leases the key's process and releases it when done. A leased process is never
 *   closed for idleness.
 * - A lease names the fingerprint of the configuration it would start from. A live process
 *   started from another one is retired: it takes no new leases and closes when its last lease
 *   is released. A starter may report the fingerprint it actually started from.
 * - One start runs per key at a time; everyone waiting on it gets its process or its error. The
 *   start timeout bounds the start, not the process.
 * - A process that has exited is replaced on the next lease.
 * - A reconcile loop closes idle and dead processes, so nothing depends on an exit being noticed
 *   the moment it happens.
 * - `drain` closes the processes of matching keys and holds their starts off until unblocked.
 * - `close` tears every process down at once and refuses later leases.
 *
 * Every state change happens synchronously in one turn (leases are counted in the same turn a
 * start completes), so no interleaving can close a process between its start and its waiters.
 */
export class Supervisor<P extends SupervisedProcess> {
  readonly #idleTtlMs: number;
  readonly #startTimeoutMs: number;
  readonly #reconcileEveryMs: number;
  readonly #timers: Timers;
  readonly #onCloseError: ((key: string, error: unknown) => void) | undefined;
  /** The generation new leases of a key get (starting or live). */
  readonly #current = new Map<string, Generation<P>>();
  /** Every generation that is not gone yet. */
  readonly #generations = new Set<Generation<P>>();
  readonly #holds = new Set<DrainHold>();
  readonly #closedSignal = deferred<void>();
  #closed = false;
  #serial = 0;
  #reconcileTimer: Timer | undefined;

  constructor(options: SupervisorOptions = {}) {
    if (typeof options !== 'object' || options === null) throw invalid('expected supervisor options');
    this.#idleTtlMs = duration(options.idleTtlMs, defaultSupervisorOptions.idleTtlMs, 'idleTtlMs');
    this.#startTimeoutMs = duration(options.startTimeoutMs, defaultSupervisorOptions.startTimeoutMs, 'startTimeoutMs');
    this.#reconcileEveryMs = duration(options.reconcileEveryMs, defaultSupervisorOptions.reconcileEveryMs, 'reconcileEveryMs');
    const timers = options.timers ?? systemTimers;
    if (typeof timers?.now !== 'function' || typeof timers.after !== 'function') throw invalid('timers must have now() and after()');
    this.#timers = timers;
    if (options.onCloseError !== undefined && typeof options.onCloseError !== 'function') throw invalid('onCloseError must be a function');
    this.#onCloseError = options.onCloseError;
    this.#scheduleReconcile();
  }

  get closed(): boolean {
    return this.#closed;
  }

  // -------------------------------------------------------------------------------------------
  // Leases

  /**
   * Returns a lease on the key's live process started from `fingerprint`, starting one with
   * `start` when there is none. Waits while a drain holds the key and while another start of the
   * key runs. Rejects with `closed` after {@link close}, with the start's own error (shared by
   * every lease waiting on it) or `start_timeout`, and with the signal's reason when it aborts.
   */
  async lease(key: string, fingerprint: string, start: Starter<P>, options: LeaseOptions = {}): Promise<Lease<P>> {
    if (typeof key !== 'string' || key.length === 0) throw invalid('a lease needs a non-empty key');
    if (typeof fingerprint !== 'string') throw invalid('a lease needs a fingerprint string');
    if (typeof start !== 'function') throw invalid('a lease needs a starter function');
    const signal = options.signal;
    for (;;) {
      if (this.#closed) throw closedError();
      signal?.throwIfAborted();
      const hold = this.#holdOn(key);
      if (hold !== undefined) {
        await this.#wait(hold.released, signal);
        continue;
      }
      const generation = this.#current.get(key);
      if (generation?.state === 'live') {
        if (!generation.dead && generation.fingerprint === fingerprint) return this.#acquire(generation);
        // Dead (replace it) or started from another configuration (retire it): start anew below.
        this.#retire(generation);
      } else if (generation?.state === 'starting') {
        if (generation.joinable(fingerprint)) return this.#join(generation, signal);
        // One start per key: let the other start finish, then look again.
        await this.#wait(generation.settled, signal);
        continue;
      }
      return this.#join(this.#start(key, fingerprint, start), signal);
    }
  }

  /** The key's current live process, without leasing or starting one; callers may only read it. */
  peek(key: string): P | undefined {
    const generation = this.#current.get(key);
    return generation?.state === 'live' && !generation.dead ? generation.process : undefined;
  }

  /** Retires `process` if it is still the key's current process (a driver found it unusable). */
  markBroken(key: string, process: P): void {
    const generation = this.#current.get(key);
    if (generation?.state === 'live' && generation.process === process) this.#retire(generation);
  }

  /**
   * Retires the current process of every matching key; a leased one closes when its last lease is
   * released. A start still running is retired as soon as it is live: the leases already waiting
   * on it get it, later leases wait for it and start anew.
   */
  retire(match: KeyMatch): void {
    const matches = keyPredicate(match);
    for (const [key, generation] of [...this.#current]) {
      if (matches(key)) this.#retire(generation);
    }
  }

  // -------------------------------------------------------------------------------------------
  // Drain

  /**
   * Closes every process of the matching keys and holds new starts on them off until the returned
   * unblock is called, so the caller can change what the next process starts from. It refuses
   * with `busy` when `busy` reports one of them at work (a start still running counts as at work),
   * or when another drain holds a matching key; it returns once they have all exited. Without
   * `busy` it closes processes at work too (and abandons running starts with `drained`).
   */
  async drain(match: KeyMatch, busy?: BusyCheck<P>, options: DrainOptions = {}): Promise<() => void> {
    if (this.#closed) throw closedError();
    if (typeof match !== 'string' && typeof match !== 'function') throw invalid('drain needs a key or a key predicate');
    if (busy !== undefined && typeof busy !== 'function') throw invalid('busy must be a function');
    const matches = keyPredicate(match);
    const drained = [...this.#generations].filter((generation) => matches(generation.key));
    const keys = new Set<string>(drained.map((generation) => generation.key));
    for (const key of this.#current.keys()) if (matches(key)) keys.add(key);
    if (typeof match === 'string') keys.add(match);

    for (const hold of this.#holds) {
      for (const key of new Set([...keys, ...hold.sampleKeys()])) {
        if (matches(key) && hold.matches(key)) throw new SupervisorError(SupervisorErrorCode.busy, `another drain holds ${key}`);
      }
    }
    if (busy !== undefined) {
      for (const generation of drained) {
        if (generation.state === 'starting') {
          throw new SupervisorError(SupervisorErrorCode.busy, `a process of ${generation.key} is starting`);
        }
        const process = generation.process;
        if ((generation.state === 'live' || generation.state === 'retired') && process !== undefined && busy(process, generation.key)) {
          throw new SupervisorError(SupervisorErrorCode.busy, `the process of ${generation.key} is at work`);
        }
      }
    }

    const hold = new DrainHold(match, keys);
    this.#holds.add(hold);
    void hold.released.then(() => this.#holds.delete(hold));
    const gone = drained.map((generation) =>
      this.#shutDown(generation, new SupervisorError(SupervisorErrorCode.drained, `the processes of ${generation.key} were drained`)),
    );
    try {
      await abortable(Promise.all(gone), options.signal);
    } catch (error) {
      hold.release();
      throw error;
    }
    return () => hold.release();
  }

  // -------------------------------------------------------------------------------------------
  // Reconcile and close

  /**
   * One pass of the reconcile loop (the loop calls it every `reconcileEveryMs`): retires dead and
   * idle live processes, closing those nobody leases, and closes retired ones nobody leases.
   */
  reconcile(): void {
    if (this.#closed) return;
    const now = this.#timers.now();
    for (const generation of [...this.#generations]) {
      if (generation.state === 'live') {
        const idle = generation.leases === 0 && now - generation.idleSince >= this.#idleTtlMs;
        if (generation.dead || idle) this.#retire(generation);
      } else if (generation.state === 'retired' && generation.leases === 0) {
        this.#closeGeneration(generation);
      }
    }
  }

  /**
   * Tears every process down at once — leased or not, starting ones included — and refuses later
   * leases and drains with `closed`. Resolves true once every generation is gone, or false when
   * the signal (the caller's deadline) aborts first. Calling it again waits again.
   */
  async close(options: CloseOptions = {}): Promise<boolean> {
    if (!this.#closed) {
      this.#closed = true;
      this.#reconcileTimer?.cancel();
      this.#reconcileTimer = undefined;
      this.#closedSignal.resolve();
      const reason = closedError();
      for (const generation of [...this.#generations]) this.#shutDown(generation, reason);
    }
    try {
      await abortable(Promise.all([...this.#generations].map((generation) => generation.gone)), options.signal);
      return true;
    } catch {
      return false;
    }
  }

  /** Every generation not gone yet, oldest first. */
  inspect(): GenerationInfo[] {
    return [...this.#generations]
      .sort((a, b) => a.serial - b.serial)
      .map((generation) => ({
        key: generation.key,
        serial: generation.serial,
        state: generation.state,
        fingerprint: generation.fingerprint,
        leases: generation.leases,
        current: this.#current.get(generation.key) === generation,
      }));
  }

  // -------------------------------------------------------------------------------------------
  // Internals

  #start(key: string, fingerprint: string, start: Starter<P>): Generation<P> {
    this.#serial += 1;
    const generation = new Generation<P>(key, fingerprint, this.#serial, this.#timers.now(), (gone) => this.#forget(gone));
    this.#current.set(key, generation);
    this.#generations.add(generation);
    const timeout = this.#timers.after(this.#startTimeoutMs, () => {
      if (generation.state !== 'starting') return;
      this.#abandon(
        generation,
        new SupervisorError(SupervisorErrorCode.startTimeout, `the start of ${key} did not finish within ${this.#startTimeoutMs} ms`),
      );
    });
    let started: Promise<Started<P>>;
    try {
      started = Promise.resolve(start({ key, fingerprint, signal: generation.startSignal }));
    } catch (error) {
      started = Promise.reject(error);
    }
    started.then(
      (result) => {
        timeout.cancel();
        this.#started(generation, result);
      },
      (error: unknown) => {
        timeout.cancel();
        this.#startFailed(generation, error);
      },
    );
    return generation;
  }

  #started(generation: Generation<P>, result: Started<P>): void {
    const process: unknown = typeof result === 'object' && result !== null ? result.process : undefined;
    if (generation.state !== 'starting') {
      // Abandoned (timeout, close, drain): the late process is closed, never handed out.
      generation.abandoned(isSupervisedProcess(process) ? process : undefined, (error) => this.#reportCloseError(generation.key, error));
      return;
    }
    const reported = result?.fingerprint;
    if (!isSupervisedProcess(process) || (reported !== undefined && typeof reported !== 'string')) {
      this.#startFailed(generation, new SupervisorError(SupervisorErrorCode.invalidStart, `the starter of ${generation.key} returned no usable process`));
      if (isSupervisedProcess(process)) void process.close().catch((error: unknown) => this.#reportCloseError(generation.key, error));
      return;
    }
    const fingerprint = reported === undefined || reported === '' ? generation.fingerprint : reported;
    const waiters = generation.goLive(process as P, fingerprint, this.#timers.now());
    for (const waiter of waiters) waiter.resolve(this.#leaseOf(generation));
    if (generation.retireWhenLive || this.#current.get(generation.key) !== generation) this.#retire(generation);
  }

  #startFailed(generation: Generation<P>, error: unknown): void {
    if (generation.state !== 'starting') {
      generation.abandoned(undefined, (closeError) => this.#reportCloseError(generation.key, closeError));
      return;
    }
    this.#detach(generation);
    for (const waiter of generation.failStart()) waiter.reject(error);
  }

  /** starting → closing for a start that must end now; its waiters get `reason`. */
  #abandon(generation: Generation<P>, reason: unknown): void {
    this.#detach(generation);
    for (const waiter of generation.abandon(reason)) waiter.reject(reason);
  }

  /** live → retired, and closed right away when nobody leases it. A start retires once live. */
  #retire(generation: Generation<P>): void {
    if (generation.state === 'starting') {
      generation.requestRetire();
      return;
    }
    if (generation.state !== 'live') return;
    this.#detach(generation);
    generation.retire();
    if (generation.leases === 0) this.#closeGeneration(generation);
  }

  /** Takes a generation down whatever its state or leases (close and drain). */
  #shutDown(generation: Generation<P>, reason: unknown): Promise<void> {
    if (generation.state === 'starting') this.#abandon(generation, reason);
    if (generation.state === 'live') this.#retire(generation);
    if (generation.state === 'retired') this.#closeGeneration(generation);
    return generation.gone;
  }

  #closeGeneration(generation: Generation<P>): void {
    void generation.close((error) => this.#reportCloseError(generation.key, error));
  }

  #acquire(generation: Generation<P>): Lease<P> {
    generation.acquire();
    return this.#leaseOf(generation);
  }

  /** A lease object for a lease already counted on `generation`. */
  #leaseOf(generation: Generation<P>): Lease<P> {
    return new Lease(generation.key, generation.process as P, generation.fingerprint, generation.serial, () => {
      if (generation.release(this.#timers.now())) this.#closeGeneration(generation);
    });
  }

  #join(generation: Generation<P>, signal: AbortSignal | undefined): Promise<Lease<P>> {
    const waiter: StartWaiter<P> = deferred<Lease<P>>();
    generation.join(waiter);
    if (signal === undefined) return waiter.promise;
    const onAbort = (): void => {
      if (generation.leave(waiter)) waiter.reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    return waiter.promise.finally(() => signal.removeEventListener('abort', onAbort));
  }

  /** Waits for `promise`, or until the supervisor closes or `signal` aborts. */
  #wait(promise: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
    return abortable(Promise.race([promise, this.#closedSignal.promise]), signal);
  }

  #holdOn(key: string): DrainHold | undefined {
    for (const hold of this.#holds) if (hold.matches(key)) return hold;
    return undefined;
  }

  #detach(generation: Generation<P>): void {
    if (this.#current.get(generation.key) === generation) this.#current.delete(generation.key);
  }

  #forget(generation: Generation<P>): void {
    this.#detach(generation);
    this.#generations.delete(generation);
  }

  #reportCloseError(key: string, error: unknown): void {
    try {
      this.#onCloseError?.(key, error);
    } catch {
      // A failing reporter must not break the supervisor's bookkeeping.
    }
  }

  #scheduleReconcile(): void {
    this.#reconcileTimer = this.#timers.after(this.#reconcileEveryMs, () => {
      if (this.#closed) return;
      this.reconcile();
      this.#scheduleReconcile();
    });
  }
}

function closedError(): SupervisorError {
  return new SupervisorError(SupervisorErrorCode.closed, 'the process supervisor is closed');
}

function invalid(message: string): SupervisorError {
  return new SupervisorError(SupervisorErrorCode.invalidArgument, `invalid supervisor argument: ${message}`);
}

function duration(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > maxTimerMs) {
    throw invalid(`${name} must be a positive number of milliseconds up to ${maxTimerMs}`);
  }
  return value;
}
