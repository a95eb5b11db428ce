/**
 * Shared fixtures of the supervisor, child-process and process-dispatcher tests: a manual clock,
 * a line reader over a child's stdout, a starter of the line-worker fixture with barriers, and the
 * pid ledger that proves no process is left behind. Nothing here sleeps: tests synchronise on
 * barriers (promises the fixture or the code under test resolves) and advance time by hand.
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { Child, type ChildOptions } from '../../src/supervisor/child.js';
import { deferred, type Deferred } from '../../src/kernel/deferred.js';
import type { Started, Starter } from '../../src/supervisor/supervised-process.js';
import type { Timer, Timers } from '../../src/supervisor/timers.js';

export const lineWorkerPath = fileURLToPath(new URL('../fixtures/line-worker.mjs', import.meta.url));
export const jsonlWorkerPath = fileURLToPath(new URL('../../scripts/jsonl-worker.mjs', import.meta.url));

// ---------------------------------------------------------------------------------------------
// Time

interface Scheduled {
  readonly at: number;
  readonly order: number;
  readonly callback: () => void;
  cancelled: boolean;
}

/** A clock that moves only when told; due timers fire in time order during {@link advance}. */
export class ManualTimers implements Timers {
  #now = 0;
  #order = 0;
  #scheduled: Scheduled[] = [];

  now(): number {
    return this.#now;
  }

  after(ms: number, callback: () => void): Timer {
    const entry: Scheduled = { at: this.#now + ms, order: this.#order++, callback, cancelled: false };
    this.#scheduled.push(entry);
    return {
      cancel: () => {
        entry.cancelled = true;
      },
    };
  }

  /** Moves the clock `ms` forward, firing every timer that falls due, in order. */
  advance(ms: number): void {
    const target = this.#now + ms;
    for (;;) {
      const due = this.#scheduled
        .filter((entry) => !entry.cancelled && entry.at <= target)
        .sort((a, b) => a.at - b.at || a.order - b.order)[0];
      if (due === undefined) break;
      this.#scheduled = this.#scheduled.filter((entry) => entry !== due);
      this.#now = Math.max(this.#now, due.at);
      due.callback();
    }
    this.#now = target;
    this.#scheduled = this.#scheduled.filter((entry) => !entry.cancelled);
  }

  /** Timers not yet fired or cancelled. */
  get pending(): number {
    return this.#scheduled.filter((entry) => !entry.cancelled).length;
  }
}

// ---------------------------------------------------------------------------------------------
// Barriers

/** Lets every queued promise reaction and I/O callback run once (a barrier, not a sleep). */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Whether `promise` has settled by the end of one {@link settle} turn. */
export async function isSettled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  await settle();
  return done;
}

/** Asserts that `action` rejects with an error carrying `code`; returns the error. */
export async function rejectsWithCode(action: Promise<unknown>, code: string): Promise<Error & { code: string }> {
  let caught: unknown;
  try {
    await action;
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof Error, `expected an error with code ${code}, got ${String(caught)}`);
  assert.equal((caught as Error & { code?: string }).code, code, `expected ${code}, got: ${(caught as Error).message}`);
  return caught as Error & { code: string };
}

// ---------------------------------------------------------------------------------------------
// Children

/** Reads a child's stdout line by line. */
export class LineReader {
  readonly #lines: string[] = [];
  readonly #waiting: Array<Deferred<string>> = [];
  #partial = '';

  constructor(child: Child) {
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (text: string) => {
      this.#partial += text;
      let index: number;
      while ((index = this.#partial.indexOf('\n')) !== -1) {
        const line = this.#partial.slice(0, index);
        this.#partial = this.#partial.slice(index + 1);
        const waiter = this.#waiting.shift();
        if (waiter === undefined) this.#lines.push(line);
        else waiter.resolve(line);
      }
    });
  }

  /** The next line; it stays pending if none ever comes (race it with the child's `done`). */
  next(): Promise<string> {
    const line = this.#lines.shift();
    if (line !== undefined) return Promise.resolve(line);
    const waiter = deferred<string>();
    this.#waiting.push(waiter);
    return waiter.promise;
  }
}

/** A spawned line-worker with its reader. */
export interface Worker {
  readonly child: Child;
  readonly lines: LineReader;
}

/** Every pid a test spawned; {@link PidLedger.assertAllGone} proves none is left behind. */
export class PidLedger {
  readonly pids: number[] = [];

  record(pid: number): void {
    this.pids.push(pid);
  }

  assertAllGone(): void {
    const alive = this.pids.filter((pid) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch (error) {
        assert.equal((error as NodeJS.ErrnoException).code, 'ESRCH');
        return false;
      }
    });
    assert.deepEqual(alive, [], `processes left behind: ${alive.join(', ')}`);
  }
}

/** Whether `pid` still exists (a zombie counts: Node reaps before it reports an exit). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Spawns the line-worker fixture and records its pid. */
export async function spawnLineWorker(ledger: PidLedger, args: readonly string[] = [], options: Partial<ChildOptions> = {}): Promise<Worker> {
  const child = await Child.spawn({ command: process.execPath, args: [lineWorkerPath, ...args], ...options });
  ledger.record(child.pid);
  return { child, lines: new LineReader(child) };
}

/**
 * A programmable starter of line-worker processes. Each start spawns the fixture (with the args of
 * the current `mode`), announces the spawn on `spawned`, and waits for the fixture's "ready" line.
 * With `honourAbort` (the default) an aborted start closes its child before rejecting; without it
 * the start ignores its signal, like a badly behaved starter, so the supervisor must clean up.
 */
export class LineWorkerStarter {
  readonly ledger: PidLedger;
  args: readonly string[] = [];
  honourAbort = true;
  /** The fingerprint the start reports (undefined keeps the lease's). */
  reportFingerprint: string | undefined;
  calls = 0;
  readonly signals: AbortSignal[] = [];
  /** Every worker this starter spawned, by its child. */
  readonly workers = new Map<Child, Worker>();
  #spawned = deferred<Worker>();

  constructor(ledger: PidLedger) {
    this.ledger = ledger;
  }

  /** Resolves with the worker of the next start once it is spawned (before it is ready). */
  nextSpawn(): Promise<Worker> {
    return this.#spawned.promise;
  }

  /** Sends `ping` to a started child and returns the pid it answers with. */
  async ping(child: Child): Promise<number> {
    const worker = this.workers.get(child);
    assert.ok(worker !== undefined, 'not a child of this starter');
    child.write('ping\n');
    const line = await worker.lines.next();
    assert.match(line, /^pong \d+$/);
    return Number(line.slice('pong '.length));
  }

  readonly start: Starter<Child> = async ({ signal }): Promise<Started<Child>> => {
    this.calls += 1;
    this.signals.push(signal);
    const worker = await spawnLineWorker(this.ledger, this.args);
    this.workers.set(worker.child, worker);
    const spawned = this.#spawned;
    this.#spawned = deferred<Worker>();
    spawned.resolve(worker);
    const ready = worker.lines.next();
    const abort = deferred<never>();
    const onAbort = (): void => abort.reject(signal.reason);
    if (this.honourAbort) signal.addEventListener('abort', onAbort, { once: true });
    try {
      const line = await Promise.race([ready, abort.promise, worker.child.done.then(() => Promise.reject(worker.child.reason))]);
      assert.equal(line, 'ready');
    } catch (error) {
      await worker.child.close();
      throw error;
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
    return { process: worker.child, fingerprint: this.reportFingerprint };
  };
}
